// Package games reads what parley's games write beside training (a
// tournament, a series folder, a run's league and cross-play, a run's
// held-out evaluations) and serves it to `parley view`: Scan finds the
// outputs under a directory, Handler serves their JSON under /api/games/,
// URLs lists every URL the pages fetch (for the export), and Assets holds
// the pages (assets/games.js, assets/games.css) that window.parley routes
// #/g/<kind>/<id> to.
//
// A record that does not parse (a truncated game, a corrupt league file)
// is named in the JSON's errors and skipped; files a writer has not
// finished (atomic writes' temporary files) are not read.
package games
