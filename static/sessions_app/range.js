// The range picker (templates/sessions_app/_range.html): a preset or a comparison
// applies at once; custom days apply with the Apply button (typing a date by keyboard
// must not reload the page at every digit). The date inputs count only for Custom
// (disabled otherwise, so they stay off the URL). Without this script the form still
// works: pick, then Apply.
(function () {
  "use strict";
  var form = document.getElementById("range-picker");
  if (!form) return;
  var period = form.elements.period;
  var from = form.elements.from;
  var to = form.elements.to;

  function custom() { return period.value === "custom"; }
  function sync() {
    from.disabled = to.disabled = !custom();
    form.classList.toggle("is-custom", custom());
  }
  function apply() {
    sync();
    if (custom() && (!from.value || !to.value)) return;
    if (typeof form.requestSubmit === "function") form.requestSubmit(); else form.submit();
  }
  form.classList.add("js");
  sync();
  period.addEventListener("change", function () {
    if (custom()) { sync(); from.focus(); return; }
    apply();
  });
  var compare = document.getElementById("range-compare");  // only where it changes the numbers
  if (compare) compare.addEventListener("change", function () {
    if (!custom()) apply();
  });
  from.addEventListener("change", function () {
    if (to.value && from.value > to.value) to.value = from.value;
  });
  to.addEventListener("change", function () {
    if (from.value && to.value < from.value) from.value = to.value;
  });
})();
