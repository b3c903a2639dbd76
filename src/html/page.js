(function () {
  "use strict";
  // The data is zlib-compressed JSON in base64 (see page.rs): inflated by the browser itself.
  function load() {
    var text = atob(document.getElementById("looptrace-data").textContent.trim());
    var bytes = new Uint8Array(text.length);
    for (var i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
    return new Response(stream).text().then(JSON.parse);
  }
  load().then(start).catch(function (err) {
    document.getElementById("shown").textContent = "The runs could not be read: " + err;
  });
  function start(D) {
    var ENDINGS = ["finished", "max_steps_exceeded", "invalid_model_output", "internal_error", "incomplete"];
    var runs = D.runs;
    var filters = { ending: "", kind: "", tool: "", verdict: "", source: "" };
    var sortKey = null, sortDir = 1, selected = null;
    var body = document.getElementById("runs-body");
    var showSource = !document.getElementById("runs-table").classList.contains("one-source");
    function el(tag, text, cls) {
      var e = document.createElement(tag);
      if (text !== null && text !== undefined) e.textContent = String(text);
      if (cls) e.className = cls;
      return e;
    }
    function ms(v) {
      if (v === null || v === undefined) return "-";
      return v < 1000 ? v.toFixed(v < 10 ? 1 : 0) + " ms" : (v / 1000).toFixed(2) + " s";
    }
    function list(v) { return v && v.length ? v.join(", ") : "-"; }
    function has(v, x) { return (v || []).indexOf(x) >= 0; }
    function matches(r) {
      if (filters.ending && ENDINGS[r[3]] !== filters.ending) return false;
      if (filters.kind && !has(r[5], filters.kind)) return false;
      if (filters.tool && !has(r[6], filters.tool)) return false;
      if (filters.verdict && (r[7] === null ? "-" : r[7]) !== filters.verdict) return false;
      if (filters.source && r[8] !== filters.source) return false;
      return true;
    }
    function render() {
      var order = [];
      for (var i = 0; i < runs.length; i++) if (matches(runs[i])) order.push(i);
      if (sortKey !== null) {
        order.sort(function (a, b) {
          var x = runs[a][sortKey], y = runs[b][sortKey];
          x = x === null ? -1 : x; y = y === null ? -1 : y;
          return (x - y) * sortDir || a - b;
        });
      }
      var frag = document.createDocumentFragment();
      order.forEach(function (i) {
        var r = runs[i], tr = document.createElement("tr");
        tr.setAttribute("data-run", String(i));
        tr.setAttribute("data-exit-reason", ENDINGS[r[3]]);
        if (i === selected) tr.className = "selected";
        tr.appendChild(el("td", D.files[r[0]], "file"));
        tr.appendChild(el("td", r[1], "run-id"));
        tr.appendChild(el("td", r[2] === null ? "-" : r[2]));
        tr.appendChild(el("td", ENDINGS[r[3]], "end end-" + ENDINGS[r[3]]));
        tr.appendChild(el("td", r[4], "num"));
        tr.appendChild(el("td", ms(r[9]), "num"));
        tr.appendChild(el("td", list(r[5])));
        tr.appendChild(el("td", list(r[6])));
        tr.appendChild(el("td", r[7] === null ? "-" : r[7]));
        if (showSource) tr.appendChild(el("td", r[8]));
        frag.appendChild(tr);
      });
      body.textContent = "";
      body.appendChild(frag);
      document.getElementById("shown").textContent =
        order.length + " of " + runs.length + " shown; click a run for its timeline";
    }
    function setFilter(key, value) {
      filters[key] = value;
      var select = document.getElementById("filter-" + key);
      if (select) select.value = value;
      render();
    }
    function show(i) {
      var r = runs[i], events = D.timelines[i] || [], box = document.getElementById("timeline");
      selected = i;
      box.textContent = "";
      box.appendChild(el("h2", "Timeline of " + r[1]));
      var meta = D.files[r[0]] + " \u00b7 " + ENDINGS[r[3]] + " \u00b7 " + r[4] + (r[4] === 1 ? " step" : " steps") + " \u00b7 " + ms(r[9]);
      if (r[2] !== null) meta = "task " + r[2] + " \u00b7 " + meta;
      if (r[7] !== null) meta += " \u00b7 " + D.verdict + ": " + r[7];
      box.appendChild(el("p", meta, "note"));
      if (r[10] !== null) {
        box.appendChild(el("p", "first divergence from the recording at step " + r[10] + ": " + r[11], "divergence"));
      }
      if (!events.length) box.appendChild(el("p", "No events of this run were read.", "note"));
      var table = el("table"), head = el("tr");
      ["step", "event", "tool", "observation, answer or feedback", "gate", "error kind", "duration"].forEach(function (h) { head.appendChild(el("th", h)); });
      var thead = el("thead"); thead.appendChild(head); table.appendChild(thead);
      var tb = el("tbody"), marked = false;
      events.forEach(function (e) {
        var tr = el("tr"), cls = [];
        if (e[5]) cls.push("error");
        if (r[10] !== null && e[0] === r[10]) { cls.push("diverged"); if (!marked) { tr.id = "first-divergence"; marked = true; } }
        tr.className = cls.join(" ");
        var name = D.events[e[1]] || "";
        if (e[2]) name += " (" + e[2] + ")";
        tr.appendChild(el("td", e[0], "num"));
        tr.appendChild(el("td", name));
        tr.appendChild(el("td", e[3] === undefined || e[3] === null ? "" : e[3]));
        tr.appendChild(el("td", e[4] === undefined || e[4] === null ? "" : e[4], "text"));
        tr.appendChild(el("td", e[7] === true ? "accepted" : e[7] === false ? "rejected" : ""));
        tr.appendChild(el("td", e[6] === undefined || e[6] === null ? "" : e[6]));
        tr.appendChild(el("td", e[8] === undefined || e[8] === null ? "" : ms(e[8]), "num"));
        tb.appendChild(tr);
      });
      table.appendChild(tb);
      box.appendChild(table);
      box.hidden = false;
      // Only the highlight moves: rebuilding thousands of rows on every click would be slow.
      Array.prototype.forEach.call(body.querySelectorAll("tr.selected"), function (tr) { tr.className = ""; });
      var row = body.querySelector('tr[data-run="' + i + '"]');
      if (row) row.className = "selected";
      // The address names the open run, so it can be shared and opened again: #run=ID.
      if (history.replaceState) history.replaceState(null, "", "#run=" + encodeURIComponent(r[1]));
      box.scrollIntoView();
    }
    // `#run=ID` opens that run's timeline (the first run with that id).
    function openFromAddress() {
      var hash = location.hash;
      if (hash.indexOf("#run=") !== 0) return;
      var id;
      try { id = decodeURIComponent(hash.slice(5)); } catch (e) { return; }
      for (var i = 0; i < runs.length; i++) {
        if (runs[i][1] === id) { show(i); return; }
      }
    }
    window.addEventListener("hashchange", openFromAddress);
    body.addEventListener("click", function (ev) {
      var tr = ev.target.closest("tr[data-run]");
      if (tr) show(Number(tr.getAttribute("data-run")));
    });
    Array.prototype.forEach.call(document.querySelectorAll("select[data-filter]"), function (s) {
      s.addEventListener("change", function () { setFilter(s.getAttribute("data-filter"), s.value); });
    });
    Array.prototype.forEach.call(document.querySelectorAll("svg .clickable[data-exit-reason]"), function (g) {
      function pick() {
        var value = g.getAttribute("data-exit-reason");
        setFilter("ending", filters.ending === value ? "" : value);
        document.getElementById("runs").scrollIntoView();
      }
      g.addEventListener("click", pick);
      g.addEventListener("keydown", function (ev) { if (ev.key === "Enter") pick(); });
    });
    document.getElementById("clear-filters").addEventListener("click", function () {
      Object.keys(filters).forEach(function (k) { setFilter(k, ""); });
    });
    Array.prototype.forEach.call(document.querySelectorAll("th.sort"), function (th) {
      function sort() {
        var key = Number(th.getAttribute("data-sort"));
        sortDir = sortKey === key ? -sortDir : 1;
        sortKey = key;
        Array.prototype.forEach.call(document.querySelectorAll("th.sort"), function (o) { o.classList.remove("asc", "desc"); });
        th.classList.add(sortDir > 0 ? "asc" : "desc");
        render();
      }
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (ev) { if (ev.key === "Enter") sort(); });
    });
    render();
    openFromAddress();
    // Tests and the load benchmark wait for this: milliseconds from navigation to a built table.
    document.body.setAttribute("data-ready", String(Math.round(performance.now())));
  }
})();
