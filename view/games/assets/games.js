/* stub: the games half replaces this file */
window.parleyGames = { render: function (kind, el) { el.textContent = "games pages not built in (" + kind + ")"; } };
