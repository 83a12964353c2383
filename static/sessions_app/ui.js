// The page frame's behaviour (templates/base.html), loaded in <head> so the "js" class is
// set before the first paint: the menu button below 900 px, <details> menus that close on
// Escape or a click outside, the confirm dialog of destructive forms, and toasts.
// Without this script every piece still works: the nav stays open, the menus are plain
// <details>, forms submit without the dialog (the server checks what matters: erasure
// asks for the key twice), messages stay on the page.
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  function menuButton() {
    var button = document.getElementById("menu-button");
    var nav = document.getElementById("main-nav");
    if (!button || !nav) return;
    button.addEventListener("click", function () {
      var open = !nav.classList.contains("open");
      nav.classList.toggle("open", open);
      button.setAttribute("aria-expanded", open ? "true" : "false");
    });
  }

  function menus() {
    var all = document.querySelectorAll("details.menu");
    function closeAll(except) {
      all.forEach(function (d) { if (d !== except) d.open = false; });
    }
    document.addEventListener("click", function (event) {
      var inside = event.target.closest && event.target.closest("details.menu");
      closeAll(inside);
    });
    document.addEventListener("keydown", function (event) {
      if (event.key !== "Escape") return;
      var open = document.querySelector("details.menu[open]");
      if (!open) return;
      open.open = false;
      open.querySelector("summary").focus();
    });
  }

  // A form with data-confirm="What happens" asks first; data-confirm-type="word" makes the
  // person type that word (an erasure's key) before the button works.
  function confirms() {
    var dialog = document.getElementById("confirm-dialog");
    if (!dialog || typeof dialog.showModal !== "function") return;
    var title = dialog.querySelector(".confirm-title");
    var text = dialog.querySelector(".confirm-text");
    var typed = dialog.querySelector(".confirm-type");
    var input = dialog.querySelector("#confirm-input");
    var expected = dialog.querySelector(".confirm-expected");
    var go = dialog.querySelector(".confirm-go");
    var pending = null;

    function sync() {
      go.disabled = !typed.hidden && input.value !== pending.getAttribute("data-confirm-type");
    }
    document.addEventListener("submit", function (event) {
      var form = event.target;
      if (!form.hasAttribute("data-confirm") || form.dataset.confirmed === "yes") return;
      event.preventDefault();
      pending = form;
      var word = form.getAttribute("data-confirm-type");
      if (word === "") word = null;
      title.textContent = form.getAttribute("data-confirm-title") || "Are you sure?";
      text.textContent = form.getAttribute("data-confirm");
      go.textContent = form.getAttribute("data-confirm-button") || "Confirm";
      typed.hidden = !word;
      input.value = "";
      expected.textContent = word || "";
      sync();
      dialog.showModal();
      (word ? input : dialog.querySelector(".confirm-cancel")).focus();
    });
    input.addEventListener("input", sync);
    dialog.querySelector(".confirm-cancel").addEventListener("click", function () { dialog.close(); });
    dialog.addEventListener("close", function () { if (pending && pending.dataset.confirmed !== "yes") pending = null; });
    go.addEventListener("click", function () {
      if (!pending || go.disabled) return;
      var form = pending;
      form.dataset.confirmed = "yes";
      dialog.close();
      if (typeof form.requestSubmit === "function") form.requestSubmit(); else form.submit();
    });
  }

  // Toasts leave after a while; a toast that holds the focus or the pointer stays.
  function toasts() {
    document.querySelectorAll(".toast").forEach(function (toast) {
      var close = toast.querySelector("button");
      function leave() {
        if (toast.matches(":hover, :focus-within")) { setTimeout(leave, 2000); return; }
        toast.classList.add("leaving");
        setTimeout(function () { toast.remove(); }, 350);
      }
      if (close) close.addEventListener("click", function () { toast.remove(); });
      if (!toast.classList.contains("error")) setTimeout(leave, 8000);
    });
  }

  // A frame that scrolls (a wide table, the Sankey) takes the keyboard focus, so arrow
  // keys scroll it; one that fits does not add a tab stop.
  function scrollers() {
    document.querySelectorAll(".table-frame, .table-scroll, .sankey, .chart-scroll").forEach(function (frame) {
      var scrolls = frame.scrollWidth > frame.clientWidth + 1 || frame.scrollHeight > frame.clientHeight + 1;
      frame.classList.toggle("scrolls", scrolls); // its hint and edge shadows show (app.css)
      if (scrolls && !frame.hasAttribute("tabindex")) {
        frame.setAttribute("tabindex", "0");
        frame.setAttribute("role", "region");
        if (!frame.hasAttribute("aria-label")) frame.setAttribute("aria-label", frame.getAttribute("data-label") || "Scrollable table");
      } else if (!scrolls && frame.getAttribute("tabindex") === "0") {
        frame.removeAttribute("tabindex");
        frame.removeAttribute("role");
      }
    });
  }

  // A Sankey label ends before the next column: the server cut it by an estimate; here it
  // is cut exactly (the page's characters, in the middle; the count kept whole), the full
  // text in its title.
  function sankeyLabels() {
    document.querySelectorAll(".sankey text[data-room]").forEach(function (label) {
      var room = parseFloat(label.getAttribute("data-room"));
      var suffix = label.getAttribute("data-suffix") || "";
      var shown = label.firstChild;
      var page = label.parentNode.getAttribute("data-page") || "";
      var chars = typeof Intl !== "undefined" && Intl.Segmenter
        ? Array.from(new Intl.Segmenter().segment(page), function (s) { return s.segment; })
        : Array.from(page);
      function fits(n) {
        // isolated (U+2068 … U+2069): a right-to-left page does not carry the count along
        // cut in the middle (as the server does): a path's last segment tells pages apart
        var head = Math.floor(n / 3);
        var cut = chars.slice(0, head).join("") + "…" + chars.slice(chars.length - (n - head)).join("");
        shown.data = "\u2068" + (n === chars.length ? page : cut) + "\u2069" + suffix;
        return label.getComputedTextLength() <= room;
      }
      if (!shown || shown.nodeType !== 3 || fits(chars.length)) return;
      var low = 0, high = chars.length - 1;
      while (low < high) {
        var middle = Math.ceil((low + high) / 2);
        if (fits(middle)) low = middle; else high = middle - 1;
      }
      fits(low);
    });
  }

  // A "Copy" button copies the text of the element its data-copy names (the snippet) and
  // says so; without a clipboard (an http page) it selects the text to copy by hand.
  function copies() {
    document.querySelectorAll("button[data-copy]").forEach(function (button) {
      var source = document.getElementById(button.getAttribute("data-copy"));
      if (!source) return;
      button.hidden = false;
      button.addEventListener("click", function () {
        var done = function () { button.textContent = "Copied"; setTimeout(function () { button.textContent = "Copy"; }, 2000); };
        var select = function () { window.getSelection().selectAllChildren(source); button.textContent = "Selected: press Ctrl+C"; };
        if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(source.textContent).then(done, select);
        else select();
      });
    });
  }

  // A page still working (an erasure running) says so and reloads itself.
  function reloads() {
    var marked = document.querySelector("[data-reload-every]");
    if (!marked) return;
    var seconds = parseFloat(marked.getAttribute("data-reload-every")) || 3;
    setTimeout(function () { window.location.reload(); }, seconds * 1000);
  }

  document.addEventListener("DOMContentLoaded", function () {
    sankeyLabels();
    scrollers();
    window.addEventListener("resize", scrollers);
    reloads();
    menuButton();
    menus();
    confirms();
    toasts();
    copies();
  });
})();
