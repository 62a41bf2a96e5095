(function () {
  "use strict";
  var root = document.documentElement;
  var errors = [];
  window.addEventListener("error", function (e) {
    errors.push(String(e.message || e.type));
    root.setAttribute("data-report-errors", errors.join(" | "));
  });
  // Sortable tables: a click on a header sorts by that column, numbers numerically.
  function key(td) {
    var t = td ? td.textContent.trim() : "";
    var n = parseFloat(t.replace(/^\+/, ""));
    return isNaN(n) ? t : n;
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      th.title = "sort by " + th.textContent.trim();
      th.addEventListener("click", function () {
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var dir = th.getAttribute("data-dir") === "asc" ? -1 : 1;
        th.setAttribute("data-dir", dir === 1 ? "asc" : "desc");
        rows.sort(function (a, b) {
          var x = key(a.cells[col]), y = key(b.cells[col]);
          if (typeof x === typeof y) { return x < y ? -dir : x > y ? dir : 0; }
          return typeof x === "number" ? -dir : dir;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
  var charts = document.querySelectorAll("svg.chart").length;
  root.setAttribute("data-charts", String(charts));
  if (errors.length === 0) {
    root.setAttribute("data-report-ready", "ok");
  }
})();
