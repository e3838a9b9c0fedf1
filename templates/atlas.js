// The atlas's one script: the search box on every page, and on the index the grid drawn from the
// JSON the page carries (a character per cell), filtered by the search box. Nothing is fetched: the data
// is in the page or in search.js, so the site opens from the file system.
(function () {
  "use strict";
  var root = window.ATLAS_ROOT || "";
  var names = { S: "servable", X: "stops", U: "undecided", ".": "not in that run" };
  var input = document.getElementById("search");
  var results = document.getElementById("search-results");
  var grid = document.getElementById("atlas-grid");
  var data = grid ? JSON.parse(grid.textContent) : null;

  function cell(text, cls) {
    var td = document.createElement("td");
    if (cls) td.className = cls;
    td.textContent = text;
    return td;
  }

  function draw() {
    var host = document.getElementById("grid");
    data.tracks.forEach(function (track) {
      var h = document.createElement("h2");
      h.textContent = track.label;
      host.appendChild(h);
      var table = document.createElement("table");
      table.className = "grid";
      var head = document.createElement("tr");
      head.appendChild(cell("model type"));
      track.cols.forEach(function (col) {
        var th = document.createElement("th");
        var a = document.createElement("a");
        a.href = root + "releases/" + col[1] + ".html";
        a.textContent = col[0];
        th.appendChild(a);
        head.appendChild(th);
      });
      var thead = document.createElement("thead");
      thead.appendChild(head);
      table.appendChild(thead);
      var body = document.createElement("tbody");
      data.types.forEach(function (type, i) {
        var row = track.rows[i];
        if (/^\.*$/.test(row)) return;
        var tr = document.createElement("tr");
        tr.dataset.type = type;
        var first = document.createElement("td");
        var a = document.createElement("a");
        a.href = root + "types/" + type + ".html";
        a.textContent = type;
        first.appendChild(a);
        tr.appendChild(first);
        for (var j = 0; j < row.length; j++) {
          var c = row.charAt(j);
          var td = cell("", "c " + (c === "." ? "A" : c));
          td.title = type + " @ " + track.cols[j][0] + ": " + names[c];
          tr.appendChild(td);
        }
        body.appendChild(tr);
      });
      table.appendChild(body);
      host.appendChild(table);
    });
  }

  function search() {
    var q = input.value.trim().toLowerCase();
    if (data) {
      document.querySelectorAll("table.grid tbody tr").forEach(function (tr) {
        tr.hidden = q !== "" && tr.dataset.type.indexOf(q) < 0;
      });
    }
    results.innerHTML = "";
    if (!q || !window.ATLAS_SEARCH) { results.hidden = true; return; }
    var found = [];
    window.ATLAS_SEARCH.types.forEach(function (t) {
      if (t.indexOf(q) >= 0) found.push([t, root + "types/" + t + ".html"]);
    });
    window.ATLAS_SEARCH.releases.forEach(function (r) {
      if (r[0].toLowerCase().indexOf(q) >= 0) found.push(["transformers " + r[0], root + "releases/" + r[1] + ".html"]);
    });
    found.slice(0, 30).forEach(function (f) {
      var li = document.createElement("li");
      var a = document.createElement("a");
      a.href = f[1];
      a.textContent = f[0];
      li.appendChild(a);
      results.appendChild(li);
    });
    results.hidden = found.length === 0;
  }

  if (data) draw();
  if (input) input.addEventListener("input", search);
})();
