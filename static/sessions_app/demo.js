// The demo shop: a single-page app (pushState navigation) that uses the tracker's API.
(function () {
  "use strict";
  var cart = [];

  function cs() {
    return window.clickstream && typeof window.clickstream.track === "function"
      ? window.clickstream
      : null;
  }

  function show(path) {
    document.querySelectorAll("[data-view]").forEach(function (section) {
      section.hidden = section.getAttribute("data-view") !== path;
    });
  }

  function navigate(path) {
    if (location.pathname + location.search === path) return;
    history.pushState({}, "", path + location.search);
    show(path);
  }

  document.addEventListener("click", function (event) {
    var link = event.target.closest("[data-nav]");
    if (link) {
      event.preventDefault();
      navigate(link.getAttribute("data-nav"));
      return;
    }
    var add = event.target.closest(".add-to-cart");
    if (add) {
      cart.push({ product: add.dataset.product, price: Number(add.dataset.price) });
      document.getElementById("cart-count").textContent = String(cart.length);
      if (cs()) cs().track("add_to_cart", { product: add.dataset.product });
    }
    if (event.target.id === "place-order" && cart.length) {
      var value = cart.reduce(function (sum, item) { return sum + item.price; }, 0);
      if (cs()) cs().track("purchase", { value: value, currency: "EUR", items: cart.length });
      cart = [];
      document.getElementById("cart-count").textContent = "0";
      document.getElementById("thanks").hidden = false;
    }
  });

  document.getElementById("login").addEventListener("submit", function (event) {
    event.preventDefault();
    var email = document.getElementById("login-email").value.trim();
    if (email && cs()) cs().identify(email);
  });

  window.addEventListener("popstate", function () { show(location.pathname); });
  show(location.pathname.replace(/\/$/, "") === "/demo" ? "/demo/" : location.pathname);
})();
