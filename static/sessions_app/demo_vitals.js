// The demo shop's About page, slow on purpose (docs/vitals.md), so that the Performance
// page has something to show: opened directly, its hero image arrives late (a poor
// Largest Contentful Paint: img#about-hero) and a banner is put above its heading once
// the page is drawn, with no room kept for it (a Cumulative Layout Shift).
(function () {
  "use strict";
  if (location.pathname.replace(/\/$/, "") !== "/demo/about") return;
  var section = document.querySelector('[data-view="/demo/about"]');
  var hero = document.getElementById("about-hero");
  if (!section || !hero) return;
  setTimeout(function () {
    var banner = document.createElement("p");
    banner.id = "promo-banner";
    banner.className = "promo";
    banner.textContent = "Free shipping this week on every order over €50. Grinders, kettles and espresso machines included.";
    section.insertBefore(banner, section.firstChild);
  }, 800);
  setTimeout(function () {
    hero.src = hero.getAttribute("data-late-src");
  }, 4200);
})();
