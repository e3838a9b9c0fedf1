(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var table = document.getElementById("matrix");
  var tbody = table.tBodies[0];
  var EXPECTED = data.outcomes.indexOf("expected");
  var FLAKY = data.outcomes.indexOf("flaky");

  // A message is whole, or [base, head, tail, middle]: message `base` (whole) cut around `middle`
  // (auditor/report/page.py, compact_messages); read only when a cell is clicked.
  function message(i) {
    var m = data.messages[i];
    if (typeof m === "string") return m;
    var base = data.messages[m[0]];
    return base.slice(0, m[1]) + m[3] + base.slice(base.length - m[2]);
  }

  // The matrix comes as data (one small array per cell), made into the table here.
  function cellElement(entry, i) {
    var td = document.createElement("td");
    if (!entry) { td.className = "c" + i + " none"; return td; }
    var seconds = typeof entry === "number" ? 0 : entry[1];
    var item = data.kinds[(typeof entry === "number" ? entry : entry[0]) - 1];
    var status = data.order[item[0]], outcome = item[1], gate = item.length > 6 && item[6] >= 0 ? data.gates[item[6]] : null;
    var was = item[5] || "";
    td.className = "c" + i + " k" + item[0] + (item[4] ? " dis" : "") + (gate ? " unr" : "")
      + (outcome === EXPECTED ? " exp" : outcome === FLAKY ? " fl" : "");
    td.dataset.s = status;
    td.dataset.o = data.outcomes[outcome];
    if (was) td.dataset.was = was;
    td.dataset.m = item[2];
    td.dataset.t = seconds;
    td.title = (was ? data.relabel + ": " + was + " · " : "") + data.titles[item[3]] + (gate ? " · unreachable: " + gate : "");
    td.textContent = data.short[item[0]] + (gate ? "†" : "");
    return td;
  }
  // Before the cells, each engine's verdict on the type: a view of serve.csv, not a matrix cell.
  var FIRST = 1 + data.engines.length;  // the row's first matrix cell
  function verdictElement(verdict) {
    var td = document.createElement("td");
    var undecided = verdict.charAt(0) === "?", gate = undecided ? verdict.slice(1) : verdict;
    td.className = "vd " + (!verdict ? "v-serves" : undecided ? "v-undecided" : "v-stops");
    td.textContent = !verdict ? "serves" : (undecided ? "? " : "") + gate.replace(/^backend\//, "");
    td.title = !verdict ? "servable" : (undecided ? "undecided at " : "stops at ") + gate;
    return td;
  }
  var fragment = document.createDocumentFragment();
  data.rows.forEach(function (entry, index) {
    var tr = document.createElement("tr");
    tr.dataset.model = entry[0];
    tr.dataset.i = index;
    var th = document.createElement("th");
    th.className = "mt";
    th.textContent = entry[0];
    tr.appendChild(th);
    data.engines.forEach(function (_, e) {
      var verdict = entry[2] ? entry[2][e] : null;
      tr.appendChild(verdict === null || verdict === undefined ? document.createElement("td") : verdictElement(verdict));
    });
    var disagrees = false;
    entry[1].forEach(function (cell, i) {
      var td = cellElement(cell, i);
      tr.appendChild(td);
      if (td.classList.contains("dis")) disagrees = true;
    });
    if (disagrees) tr.dataset.disagree = "1";
    fragment.appendChild(tr);
  });
  tbody.appendChild(fragment);
  var rows = Array.prototype.slice.call(tbody.rows);
  var filter = document.getElementById("filter");
  var disagree = document.getElementById("disagree");
  var shown = document.getElementById("shown");
  var dynamic = document.createElement("style");
  document.head.appendChild(dynamic);
  var rank = {};
  data.order.forEach(function (s, i) { rank[s] = i; });

  function checked(selector) {
    return Array.prototype.slice.call(document.querySelectorAll(selector))
      .filter(function (box) { return box.checked; })
      .map(function (box) { return box.value; });
  }

  // The row filters beside the cells': an engine's verdict (one environment), whose fault a
  // finding is, and the cause an engine stops the type with; each picks rows from the page's
  // data (a cause's rows are listed in data.stops), never from an attribute per cell.
  var verdictFilters = Array.prototype.slice.call(document.querySelectorAll(".verdict-filter"));
  var faultFilter = document.getElementById("fault-filter");
  var causeFilter = document.getElementById("cause-filter");
  var causeRows = data.stops.map(function (indices) {
    var picked = {};
    indices.forEach(function (i) { picked[i] = true; });
    return picked;
  });
  function kindOf(entry) { return data.kinds[(typeof entry === "number" ? entry : entry[0]) - 1]; }
  function verdictOf(entry, engine) {
    var verdict = entry[2] ? entry[2][engine] : null;
    if (verdict === null || verdict === undefined) return "";
    return !verdict ? "servable" : verdict.charAt(0) === "?" ? "undecided" : "stops";
  }
  function rowFilters(row, visible) {
    var entry = data.rows[Number(row.dataset.i)];
    for (var f = 0; f < verdictFilters.length; f++) {
      var want = verdictFilters[f].value;
      if (want && verdictOf(entry, Number(verdictFilters[f].dataset.engine)) !== want) return false;
    }
    if (causeFilter && causeFilter.value !== "" && !causeRows[Number(causeFilter.value)][row.dataset.i]) return false;
    if (faultFilter && faultFilter.value) {
      for (var i = 0; i < entry[1].length; i++) {
        if (!entry[1][i] || !visible[i]) continue;
        var item = kindOf(entry[1][i]);
        if (data.outcomes[item[1]] === "finding" && data.faultcodes[data.titlefaults[item[3]]] === faultFilter.value) return true;
      }
      return false;
    }
    return true;
  }

  function apply() {
    var text = filter.value.trim().toLowerCase();
    var statuses = checked(".status-filter");
    var allStatuses = statuses.length === data.order.length;
    var wanted = {};
    statuses.forEach(function (s) { wanted[s] = true; });
    var columns = checked(".column-filter").map(Number);
    var visible = {};
    columns.forEach(function (c) { visible[c] = true; });
    var onlyDisagree = disagree.checked;
    var count = 0;
    rows.forEach(function (row) {
      var show = !text || row.dataset.model.toLowerCase().indexOf(text) !== -1;
      if (show && (onlyDisagree || !allStatuses || onlyFindings)) {
        var statusHit = allStatuses && !onlyFindings, disagreeHit = !onlyDisagree;
        for (var i = FIRST; i < row.cells.length; i++) {
          var cell = row.cells[i];
          if (!visible[i - FIRST] || !cell.dataset.s) continue;
          if (wanted[cell.dataset.s] && (!onlyFindings || cell.dataset.o === "finding")) statusHit = true;
          if (cell.classList.contains("dis")) disagreeHit = true;
        }
        show = statusHit && disagreeHit;
      }
      if (show) show = rowFilters(row, visible);
      row.hidden = !show;
      if (show) count++;
    });
    var css = [];
    data.columns.forEach(function (_, i) { if (!visible[i]) css.push("#matrix .c" + i + "{display:none}"); });
    dynamic.textContent = css.join("\n");
    document.querySelectorAll("#matrix th.group").forEach(function (th) {
      var left = 0;
      document.querySelectorAll('#matrix tr.cols th[data-group="' + th.dataset.group + '"]').forEach(function (h) {
        if (visible[Number(h.dataset.col)]) left++;
      });
      th.hidden = left === 0;
      th.colSpan = Math.max(left, 1);
    });
    shown.textContent = "showing " + count + " of " + rows.length + " model types";
  }

  var sortState = { key: null, descending: false };
  function sortBy(key) {
    sortState.descending = sortState.key === key ? !sortState.descending : false;
    sortState.key = key;
    var sign = sortState.descending ? -1 : 1;
    function value(row) {
      if (key === "model") return [0, row.dataset.model];
      var cell = row.cells[Number(key) + FIRST];
      var s = cell && cell.dataset.s;
      return [s === undefined ? 1e9 : (s in rank ? rank[s] : 1e8), row.dataset.model];
    }
    rows.sort(function (a, b) {
      var va = value(a), vb = value(b);
      if (va[0] !== vb[0]) return sign * (va[0] - vb[0]);
      return va[1] < vb[1] ? -sign : va[1] > vb[1] ? sign : 0;
    });
    rows.forEach(function (row) { tbody.appendChild(row); });
    table.querySelectorAll("thead th").forEach(function (th) { th.removeAttribute("aria-sort"); });
    var header = key === "model" ? table.querySelector("th.mt") : table.querySelector('tr.cols th[data-col="' + key + '"]');
    header.setAttribute("aria-sort", sortState.descending ? "descending" : "ascending");
  }

  // "failures only": the rows with a finding (not a skip, a flaky cell or an expected failure),
  // until a status box or "all statuses" is touched again.
  var onlyFindings = false;
  var details = document.getElementById("details");
  function show(cell) {
    var row = cell.parentNode;
    var index = Array.prototype.indexOf.call(row.cells, cell) - FIRST;
    var column = data.columns[index];
    document.getElementById("d-title").textContent = row.dataset.model;
    document.getElementById("d-env").textContent = column.environment;
    document.getElementById("d-col").textContent = column.column;
    document.getElementById("d-status").textContent = cell.dataset.s;
    document.getElementById("d-seconds").textContent = cell.dataset.t;
    document.getElementById("d-sig").textContent = cell.title;
    document.getElementById("d-message").textContent = message(Number(cell.dataset.m));
    details.hidden = false;
    table.querySelectorAll("td.selected").forEach(function (td) { td.classList.remove("selected"); });
    cell.classList.add("selected");
  }

  table.addEventListener("click", function (event) {
    var target = event.target;
    if (target.tagName === "TD" && target.dataset.s) { show(target); return; }
    if (target.tagName === "TH" && target.dataset.col !== undefined) { sortBy(target.dataset.col); return; }
    if (target.tagName === "TH" && target.dataset.sort === "model") { sortBy("model"); }
  });
  document.getElementById("details-close").addEventListener("click", function () { details.hidden = true; });
  document.addEventListener("keydown", function (event) { if (event.key === "Escape") details.hidden = true; });
  filter.addEventListener("input", apply);
  disagree.addEventListener("change", apply);
  document.querySelectorAll(".column-filter").forEach(function (box) { box.addEventListener("change", apply); });
  document.querySelectorAll(".status-filter").forEach(function (box) {
    box.addEventListener("change", function () { onlyFindings = false; apply(); });
  });
  var findingStatuses = {};
  rows.forEach(function (row) {
    for (var i = FIRST; i < row.cells.length; i++) if (row.cells[i].dataset.o === "finding") findingStatuses[row.cells[i].dataset.s] = true;
  });
  document.getElementById("only-failing").addEventListener("click", function () {
    document.querySelectorAll(".status-filter").forEach(function (box) { box.checked = !!findingStatuses[box.value]; });
    onlyFindings = true;
    apply();
  });
  document.getElementById("all-statuses").addEventListener("click", function () {
    document.querySelectorAll(".status-filter").forEach(function (box) { box.checked = true; });
    onlyFindings = false;
    apply();
  });
  verdictFilters.forEach(function (select) { select.addEventListener("change", apply); });
  [faultFilter, causeFilter].forEach(function (select) { if (select) select.addEventListener("change", apply); });
  function clearFilters() {
    filter.value = "";
    disagree.checked = false;
    verdictFilters.forEach(function (select) { select.value = ""; });
    [faultFilter, causeFilter].forEach(function (select) { if (select) select.value = ""; });
    document.querySelectorAll(".status-filter").forEach(function (box) { box.checked = true; });
    onlyFindings = false;
  }
  var clear = document.getElementById("clear-filters");
  if (clear) clear.addEventListener("click", function () { clearFilters(); apply(); });
  // A cause of the tables of where types stop (or its slice of the bar) shows its types alone.
  document.querySelectorAll("[data-cause]").forEach(function (element) {
    element.addEventListener("click", function (event) {
      event.preventDefault();
      clearFilters();
      causeFilter.value = element.dataset.cause;
      apply();
      document.getElementById("matrix-section").scrollIntoView();
    });
  });
  apply();
})();
