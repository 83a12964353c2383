// The dashboard's "Right now" box: polls /api/sites/<id>/realtime every data-every ms
// (settings.REALTIME_REFRESH_MS, 5 s) and redraws the visitor count and the pages, as
// text (no HTML from the server is inserted).
(function () {
  "use strict";
  var box = document.getElementById("realtime");
  if (!box || !window.fetch) return;
  var url = box.getAttribute("data-url");
  var every = Number(box.getAttribute("data-every")) || 5000;
  var count = box.querySelector(".rt-visitors");
  var noun = box.querySelector(".rt-noun");
  var body = box.querySelector(".rt-pages tbody");

  function cell(text, cls) {
    var td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    return td;
  }

  function draw(now) {
    count.textContent = String(now.visitors);
    if (noun) noun.textContent = now.visitors === 1 ? "visitor" : "visitors";  // not "1 visitors"
    var rows = now.pages.map(function (p) {
      var tr = document.createElement("tr");
      tr.appendChild(cell(p.path));
      tr.appendChild(cell(String(p.views), "num"));
      return tr;
    });
    body.replaceChildren.apply(body, rows);
    box.setAttribute("data-updated", new Date().toISOString());
  }

  function poll() {
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) {
        return r.ok ? r.json() : null;
      })
      .then(function (now) {
        if (now) draw(now);
      })
      .catch(function () {})
      .then(function () {
        setTimeout(poll, every);
      });
  }
  setTimeout(poll, every);
})();
