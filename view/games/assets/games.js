// games.js: the tournament, series, league and compare pages of parley
// view. Data comes only through window.parley.api; elements through
// window.parley.el (HTML) and svg() below (SVG). app.js routes
// #/g/<kind>/<id> to window.parleyGames.render(kind, el, [id, ...]).
(function () {
  "use strict";
  var P = window.parley;
  // el calls parley.el with null attributes dropped and children
  // flattened (arrays spread, null skipped, numbers as text).
  function el(tag, attrs) {
    var a = {};
    for (var k in attrs || {}) if (attrs[k] != null) a[k] = attrs[k];
    var kids = [];
    (function add(list) {
      for (var i = 0; i < list.length; i++) {
        var c = list[i];
        if (c == null) continue;
        if (Array.isArray(c)) add(c); else kids.push(typeof c === "number" ? String(c) : c);
      }
    })(Array.prototype.slice.call(arguments, 2));
    return P.el.apply(null, [tag, a].concat(kids));
  }
  var NS = "http://www.w3.org/2000/svg";

  function svg(tag, attrs) {
    var n = document.createElementNS(NS, tag);
    for (var k in attrs || {}) n.setAttribute(k, attrs[k]);
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c == null) continue;
      n.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return n;
  }
  function q(path, params) {
    var s = [];
    for (var k in params) s.push(enc(k) + "=" + enc(params[k]));
    // The same order Go's url.Values.Encode writes (sorted keys), so an
    // exported snapshot finds the URL.
    s.sort();
    return path + "?" + s.join("&");
  }
  // enc escapes as Go's url.QueryEscape does.
  function enc(v) {
    return encodeURIComponent(v).replace(/[!'()*]/g, function (c) { return "%" + c.charCodeAt(0).toString(16).toUpperCase(); }).replace(/%20/g, "+");
  }
  function fmt(v, d) { return v == null ? "–" : Number(v).toFixed(d == null ? 2 : d); }
  function clear(n) { while (n.firstChild) n.removeChild(n.firstChild); return n; }
  function errors(list) {
    if (!list || !list.length) return null;
    return el("div", { class: "g-errors" }, el("b", {}, "Skipped (could not be read):"),
      el("ul", {}, list.map(function (e) { return el("li", {}, e); })));
  }
  function fail(root, err) {
    root.appendChild(el("div", { class: "g-errors" }, "Could not load: " + (err && err.message || err)));
  }
  // color maps v in [lo, hi] from pale to deep blue.
  function color(v, lo, hi) {
    if (v == null) return "#eee";
    var t = hi > lo ? Math.max(0, Math.min(1, (v - lo) / (hi - lo))) : 0.5;
    var l = 95 - 55 * t;
    return "hsl(215,70%," + l + "%)";
  }

  // heatmap draws a matrix ({rows, cols, value, count, seats}) as an SVG
  // grid; onCell(row, col) is called when a cell with games is clicked.
  function heatmap(m, onCell) {
    var cw = 84, ch = 34, left = 150, top = 96;
    var w = left + cw * m.cols.length + 100, h = top + ch * m.rows.length + 10;
    var lo = Infinity, hi = -Infinity;
    m.value.forEach(function (r) { r.forEach(function (v) { if (v != null) { lo = Math.min(lo, v); hi = Math.max(hi, v); } }); });
    if (lo > 0 && hi <= 1) lo = 0;
    var s = svg("svg", { class: "g-heatmap", width: w, height: h, viewBox: "0 0 " + w + " " + h, role: "img" });
    s.appendChild(svg("text", { x: left + cw * m.cols.length / 2, y: 14, "text-anchor": "middle", class: "g-axis" }, m.seats[1] + " →"));
    s.appendChild(svg("text", { x: 4, y: top - 8, class: "g-axis" }, m.seats[0] + " ↓"));
    m.cols.forEach(function (c, j) {
      var x = left + cw * j + cw / 2;
      s.appendChild(svg("text", { x: x, y: top - 8, transform: "rotate(-30 " + x + " " + (top - 8) + ")", class: "g-label" }, c));
    });
    m.rows.forEach(function (r, i) {
      var y = top + ch * i;
      s.appendChild(svg("text", { x: left - 6, y: y + ch / 2 + 4, "text-anchor": "end", class: "g-label" }, r));
      m.cols.forEach(function (c, j) {
        var v = m.value[i][j], n = m.count[i][j];
        var g = svg("g", { class: n ? "g-cell g-click" : "g-cell", "data-row": r, "data-col": c },
          svg("rect", { x: left + cw * j, y: y, width: cw - 2, height: ch - 2, fill: color(v, lo, hi) }),
          svg("text", { x: left + cw * j + cw / 2 - 1, y: y + ch / 2 + 4, "text-anchor": "middle",
            fill: v != null && (v - lo) / ((hi - lo) || 1) > 0.6 ? "#fff" : "#222" }, v == null ? "·" : fmt(v)),
          svg("title", {}, r + " × " + c + ": " + fmt(v, 3) + " over " + n + " games"));
        if (n) g.addEventListener("click", function () { onCell(r, c); });
        s.appendChild(g);
      });
    });
    return s;
  }

  // gamesView shows a cell's games: each turn with its speaker, and the
  // ledger entry of each holder turn (offers, moves, balances) beside it.
  function gamesView(cell) {
    var box = el("div", { class: "g-games" },
      el("h3", {}, cell.seats[0] + " " + cell.row + " × " + cell.seats[1] + " " + cell.col + ": " + cell.games.length + (cell.games.length === 1 ? " game" : " games")),
      errors(cell.errors));
    cell.games.forEach(function (g) {
      var head = el("span", { class: "g-game-head" },
        el("b", {}, g.id), " ", g.condition ? "condition " + g.condition + ", " : "",
        "scenario " + (g.scenario || "–") + ", value " + fmt(g.value, 3),
        g.summary.ended ? ", ended: " + g.summary.ended : "",
        g.failed ? el("span", { class: "g-bad" }, " failed: " + (g.error || "")) : null);
      var rows = [], holderTurn = 0;
      g.turns.forEach(function (t, i) {
        var led = null;
        if (t.agent === cell.seats[0] && holderTurn < g.ledger.length) led = g.ledger[holderTurn++];
        rows.push(el("tr", { class: "g-turn" },
          el("td", {}, String(i + 1)),
          el("td", { class: "g-speaker" }, t.agent, t.weight_version ? el("div", { class: "g-dim" }, "v" + t.weight_version) : null),
          el("td", { class: "g-text" }, t.text),
          el("td", { class: "g-ledger" }, led ? ledger(led) : "")));
      });
      box.appendChild(el("details", { class: "g-game", open: cell.games.length <= 2 ? "" : null }, el("summary", {}, head),
        el("table", { class: "g-turns" },
          el("thead", {}, el("tr", {}, el("th", {}, "#"), el("th", {}, "speaker"), el("th", {}, "turn"), el("th", {}, "ledger"))),
          el("tbody", {}, rows)),
        g.judge ? el("p", { class: "g-dim" }, "Scorer: " + g.judge) : null));
    });
    return box;
  }
  function ledger(e) {
    var parts = [];
    if ("balance_before" in e) parts.push(el("div", {}, "balance " + fmt(e.balance_before) + " → " + fmt(e.balance_after)));
    if ("moved" in e) parts.push(el("div", { class: e.moved > 0 ? "g-moved" : "" }, "moved " + fmt(e.moved)));
    if (e.verdict) parts.push(el("div", { class: "g-dim" }, "verdict: " + Object.keys(e.verdict).filter(function (k) {
      var v = e.verdict[k];
      return v !== "" && v !== false && v != null;
    }).map(function (k) { return k + " " + (typeof e.verdict[k] === "object" ? JSON.stringify(e.verdict[k]) : e.verdict[k]); }).join(", ")));
    if (e.note) parts.push(el("div", { class: "g-dim" }, e.note));
    if (e.parsed === false) parts.push(el("div", { class: "g-bad" }, "unparsed" + (e.error ? ": " + e.error : "")));
    if (!parts.length) parts.push(el("code", {}, JSON.stringify(e)));
    return el("div", {}, parts);
  }

  // openCell loads a cell's games into box.
  function openCell(box, url) {
    clear(box).appendChild(el("p", {}, "Loading…"));
    return P.api(url).then(function (cell) {
      clear(box).appendChild(gamesView(cell));
    }, function (e) { fail(clear(box), e); });
  }

  // tournament: args are [id] or [id, row, col] (a cell opened).
  function tournament(root, id, args) {
    return P.api(q("/api/games/tournament", { id: id })).then(function (m) {
      var games = el("div", { class: "g-cellbox" }, el("p", { class: "g-dim" }, "Click a cell to open its games."));
      var cellURL = function (r, c) { return q("/api/games/tournament/games", { id: id, row: r, col: c }); };
      root.appendChild(el("h2", {}, "Tournament " + m.name));
      root.appendChild(el("p", {}, m.games + " games played, " + m.failed + " failed. Cell: " + m.measure + "."));
      root.appendChild(errors(m.errors) || el("span"));
      root.appendChild(heatmap(m, function (r, c) { openCell(games, cellURL(r, c)); }));
      root.appendChild(games);
      if (args[1] && args[2]) return openCell(games, cellURL(args[1], args[2]));
    });
  }

  // lineChart draws series [{name, points:[{x,y,lo,hi}], cls}] with axes;
  // lo/hi draw a band (ratings ± RD).
  function lineChart(lines, o) {
    var w = o.width || 560, h = o.height || 240, l = 52, r = 150, t = 14, b = 34;
    var xs = [], ys = [];
    lines.forEach(function (s) { s.points.forEach(function (p) { xs.push(p.x); ys.push(p.lo != null ? p.lo : p.y, p.hi != null ? p.hi : p.y); }); });
    var x0 = Math.min.apply(null, xs), x1 = Math.max.apply(null, xs), y0 = o.y0 != null ? o.y0 : Math.min.apply(null, ys), y1 = o.y1 != null ? o.y1 : Math.max.apply(null, ys);
    if (x1 === x0) x1 = x0 + 1;
    if (y1 === y0) y1 = y0 + 1;
    var X = function (v) { return l + (w - l - r) * (v - x0) / (x1 - x0); };
    var Y = function (v) { return t + (h - t - b) * (1 - (v - y0) / (y1 - y0)); };
    var s = svg("svg", { class: "g-chart", width: w, height: h, viewBox: "0 0 " + w + " " + h });
    s.appendChild(svg("line", { x1: l, y1: h - b, x2: w - r, y2: h - b, class: "g-axisline" }));
    s.appendChild(svg("line", { x1: l, y1: t, x2: l, y2: h - b, class: "g-axisline" }));
    [y0, (y0 + y1) / 2, y1].forEach(function (v) {
      s.appendChild(svg("text", { x: l - 4, y: Y(v) + 4, "text-anchor": "end", class: "g-tick" }, fmt(v, o.digits == null ? 2 : o.digits)));
    });
    var xt = {};
    xs.forEach(function (v) { xt[v] = 1; });
    Object.keys(xt).forEach(function (v) { s.appendChild(svg("text", { x: X(+v), y: h - b + 14, "text-anchor": "middle", class: "g-tick" }, v)); });
    s.appendChild(svg("text", { x: (l + w - r) / 2, y: h - 4, "text-anchor": "middle", class: "g-axis" }, o.xlabel || ""));
    s.appendChild(svg("text", { x: 12, y: t + (h - t - b) / 2, transform: "rotate(-90 12 " + (t + (h - t - b) / 2) + ")", "text-anchor": "middle", class: "g-axis" }, o.ylabel || ""));
    var labels = [];
    lines.forEach(function (ln, k) {
      var pts = ln.points;
      if (ln.ci != null) k = ln.ci;
      if (pts.length && pts[0].lo != null) {
        var up = pts.map(function (p) { return X(p.x) + "," + Y(p.hi); });
        var dn = pts.slice().reverse().map(function (p) { return X(p.x) + "," + Y(p.lo); });
        s.appendChild(svg("polygon", { points: up.concat(dn).join(" "), class: "g-band g-c" + (k % 6) }));
      }
      s.appendChild(svg("polyline", { points: pts.map(function (p) { return X(p.x) + "," + Y(p.y); }).join(" "), class: "g-line g-c" + (k % 6) + " " + (ln.cls || "") }));
      pts.forEach(function (p) {
        s.appendChild(svg("circle", { cx: X(p.x), cy: Y(p.y), r: 3, class: "g-dot g-c" + (k % 6) + " " + (ln.cls || "") },
          svg("title", {}, ln.name + " at " + p.x + ": " + fmt(p.y, o.digits == null ? 3 : o.digits) + (p.lo != null ? " (± " + fmt(p.y - p.lo, 0) + ")" : ""))));
      });
      var last = pts[pts.length - 1];
      if (last) labels.push({ y: Y(last.y) + 4, name: ln.name, cls: "g-legend g-c" + (k % 6) + " " + (ln.cls || "") });
    });
    // End labels, pushed apart so that none overlaps the one above.
    labels.sort(function (a, b) { return a.y - b.y; });
    labels.forEach(function (lb, i) {
      if (i > 0 && lb.y < labels[i - 1].y + 12) lb.y = labels[i - 1].y + 12;
      s.appendChild(svg("text", { x: w - r + 6, y: lb.y, class: lb.cls }, lb.name));
    });
    return s;
  }

  function series(root, id) {
    return P.api(q("/api/games/series", { id: id })).then(function (s) {
      root.appendChild(el("h2", {}, "Series " + s.name));
      root.appendChild(errors(s.errors) || el("span"));
      s.series.forEach(function (one) {
        var name = function (r) { return (one.names[r] || r) + (r === one.adversary ? " (adversary)" : ""); };
        var box = el("section", { class: "g-series" }, el("h3", {}, one.id),
          el("p", {}, one.games.length + " games. Adversary: ", el("span", { class: "g-adv" }, one.adversary ? name(one.adversary) : "none marked")));
        var rows = one.games.map(function (g) {
          return el("tr", {}, el("td", {}, String(g.index + 1)), el("td", {}, g.prompt_id),
            el("td", {}, g.failed ? el("span", { class: "g-bad" }, "failed") : g.summary.deal ? "deal " + (g.summary.package || "") : "no deal"),
            el("td", {}, String(g.rounds)));
        });
        box.appendChild(el("table", { class: "g-table" }, el("thead", {}, el("tr", {}, el("th", {}, "game"), el("th", {}, "prompt"), el("th", {}, "outcome"), el("th", {}, "rounds"))), el("tbody", {}, rows)));
        var charts = el("div", { class: "g-charts" });
        one.roles.forEach(function (obs) {
          if (obs === one.adversary) return;
          var lines = [];
          one.roles.forEach(function (cp) {
            if (cp === obs) return;
            var pts = [];
            one.games.forEach(function (g) { var v = g.trust[obs] && g.trust[obs][cp]; if (v != null) pts.push({ x: g.index + 1, y: v }); });
            // One color per party across the charts.
            if (pts.length) lines.push({ name: name(cp), points: pts, ci: one.roles.indexOf(cp), cls: cp === one.adversary ? "g-advline" : "" });
          });
          if (lines.length) charts.appendChild(el("div", { class: "g-chartbox" }, el("h4", {}, "Trust of " + name(obs) + " after each game"),
            lineChart(lines, { y0: 0, y1: 1, xlabel: "game", ylabel: "trust", width: 440, height: 200 })));
        });
        box.appendChild(charts);
        root.appendChild(box);
      });
    });
  }

  // leaguePage: args are [id] or [id, xp, row, col] (a cross-play cell
  // opened).
  function leaguePage(root, id, args) {
    return P.api(q("/api/games/league", { id: id })).then(function (l) {
      root.appendChild(el("h2", {}, "League " + l.name + (l.step ? " (after step " + l.step + ")" : "")));
      root.appendChild(errors(l.errors) || el("span"));
      l.roles.forEach(function (r) {
        root.appendChild(el("h3", {}, "Role " + r.role + ": trained " + fmt(r.trained.r, 0) + " ± " + fmt(r.trained.rd, 0)));
        root.appendChild(el("table", { class: "g-table" },
          el("thead", {}, el("tr", {}, ["member", "kind", "joined", "rating ± RD", "games", "drawn"].map(function (h) { return el("th", {}, h); }))),
          el("tbody", {}, r.members.map(function (m) {
            return el("tr", {}, el("td", {}, m.id), el("td", {}, m.kind), el("td", {}, m.joined_step ? "step " + m.joined_step : "–"),
              el("td", {}, fmt(m.rating.r, 0) + " ± " + fmt(m.rating.rd, 0)), el("td", {}, String(m.games)), el("td", {}, String(m.drawn)));
          }))));
        var band = function (p) { return { x: p.step, y: p.r, lo: p.r - p.rd, hi: p.r + p.rd }; };
        var lines = [];
        if (r.history.length) lines.push({ name: "trained " + r.role, points: r.history.map(band) });
        Object.keys(r.member_history || {}).sort().forEach(function (m) {
          lines.push({ name: m, points: r.member_history[m].map(band) });
        });
        if (lines.length) root.appendChild(el("div", { class: "g-chartbox" }, el("h4", {}, "Ratings over training: the trained " + r.role + " and the league's members (band: ± RD)"),
          lineChart(lines, { xlabel: "step", ylabel: "Glicko-2 rating", digits: 0, width: 760, height: 280 })));
      });
      l.crossplay.forEach(function (xp) {
        var games = el("div", { class: "g-cellbox" }, el("p", { class: "g-dim" }, "Click a cell to open its games."));
        root.appendChild(el("h3", {}, "Cross-play " + xp.name + ": " + xp.matrix.games + " games, " + xp.matrix.failed + " failed"));
        var cellURL = function (r, c) { return q("/api/games/league/games", { id: id, xp: xp.name, row: r, col: c }); };
        root.appendChild(heatmap(xp.matrix, function (r, c) { openCell(games, cellURL(r, c)); }));
        root.appendChild(games);
        if (args[1] === xp.name && args[2] && args[3]) openCell(games, cellURL(args[2], args[3]));
      });
    });
  }

  // sideBySide shows one comparison: both finals and the verdicts of
  // both orders.
  function sideBySide(x, left, right) {
    return el("div", { class: "g-pair" },
      el("div", { class: "g-compare" },
        el("div", { class: "g-final" }, el("div", { class: "g-dim" }, left + (x.aspect ? ", aspect " + x.aspect : "")), x.left_final),
        el("div", { class: "g-final g-base" }, el("div", { class: "g-dim" }, right), x.right_final)),
      el("div", { class: "g-verdict" },
        el("b", {}, "Verdicts, both orders: "), x.left_wins + " " + left + ", " + x.right_wins + " " + right + ", " + x.ties + " ties" + (x.excluded ? " (excluded: " + x.excluded + ")" : ""),
        el("div", {}, el("i", {}, left + " shown first: "), x.left_first_rationale || "–"),
        el("div", {}, el("i", {}, right + " shown first: "), x.right_first_rationale || "–")));
  }

  // pairwise shows an eval pairwise details file: a prompt's comparisons
  // by decoding and run.
  function pairwise(root, id, c) {
    root.appendChild(el("h2", {}, "Pairwise " + c.left + " vs " + c.right + " (" + c.name + ")"));
    root.appendChild(errors(c.errors) || el("span"));
    var sp = el("select", { name: "prompt" }, c.prompts.map(function (p) { return el("option", { value: p }, p); }));
    var out = el("div", {});
    var show = function () {
      P.api(q("/api/games/compare/prompt", { id: id, prompt: sp.value })).then(function (p) {
        clear(out);
        Object.keys(p.steps).sort().forEach(function (k) {
          out.appendChild(el("h4", {}, k));
          p.steps[k].forEach(function (x) { out.appendChild(sideBySide(x, c.left, c.right)); });
        });
      }, function (e) { fail(clear(out), e); });
    };
    sp.addEventListener("change", show);
    root.appendChild(el("div", { class: "g-pick" }, "prompt ", sp));
    root.appendChild(out);
    if (c.prompts.length) show();
  }

  function compare(root, id) {
    return P.api(q("/api/games/compare", { id: id })).then(function (c) {
      if (c.pairwise) return pairwise(root, id, c);
      root.appendChild(el("h2", {}, "Held-out evaluations " + c.name));
      root.appendChild(errors(c.errors) || el("span"));
      root.appendChild(el("table", { class: "g-table" },
        el("thead", {}, el("tr", {}, ["step", "adapter", "vs", "set", "win rate"].map(function (h) { return el("th", {}, h); }))),
        el("tbody", {}, c.steps.map(function (s) {
          return el("tr", {}, el("td", {}, String(s.step)), el("td", {}, s.adapter), el("td", {}, s.base), el("td", {}, s.set), el("td", {}, fmt(s.win_rate)));
        }))));
      if (!c.steps.length) return;
      var pick = function (name, v) {
        return el("select", { name: name }, (name === "prompt" ? c.prompts : c.steps.map(function (s) { return String(s.step); })).map(function (o) {
          return el("option", { value: o, selected: o === v ? "" : null }, o);
        }));
      };
      var sp = pick("prompt", c.prompts[0]), sa = pick("a", String(c.steps[0].step)), sb = pick("b", String(c.steps[c.steps.length - 1].step));
      var out = el("div", { class: "g-compare" });
      var show = function () {
        P.api(q("/api/games/compare/prompt", { id: id, prompt: sp.value })).then(function (p) {
          clear(out);
          [sa.value, sb.value].forEach(function (st) {
            var col = el("div", { class: "g-side" }, el("h4", {}, "Checkpoint step " + st));
            (p.steps[st] || []).forEach(function (x) {
              col.appendChild(el("div", { class: "g-final" }, el("div", { class: "g-dim" }, "trained (step " + st + ")" + (x.aspect ? ", aspect " + x.aspect : "")), x.left_final));
              col.appendChild(el("div", { class: "g-final g-base" }, el("div", { class: "g-dim" }, "base"), x.right_final));
              col.appendChild(el("div", { class: "g-verdict" },
                el("b", {}, "Verdicts, both orders: "), x.left_wins + " trained, " + x.right_wins + " base, " + x.ties + " ties" + (x.excluded ? " (excluded: " + x.excluded + ")" : ""),
                el("div", {}, el("i", {}, "trained shown first: "), x.left_first_rationale || "–"),
                el("div", {}, el("i", {}, "base shown first: "), x.right_first_rationale || "–")));
            });
            if (!(p.steps[st] || []).length) col.appendChild(el("p", { class: "g-dim" }, "not compared at this step"));
            out.appendChild(col);
          });
        }, function (e) { fail(clear(out), e); });
      };
      [sp, sa, sb].forEach(function (s) { s.addEventListener("change", show); });
      root.appendChild(el("div", { class: "g-pick" }, "prompt ", sp, " checkpoint ", sa, " vs ", sb));
      root.appendChild(out);
      show();
    });
  }

  var pages = { tournament: tournament, series: series, league: leaguePage, compare: compare };
  window.parleyGames = {
    render: function (kind, root, args) {
      clear(root);
      var page = el("div", { class: "g-page" });
      root.appendChild(page);
      var fn = pages[kind];
      if (!fn) { fail(page, "no games page of kind " + kind); return Promise.resolve(); }
      args = args || [];
      return Promise.resolve(fn(page, args[0], args)).catch(function (e) { fail(page, e); });
    }
  };
})();
