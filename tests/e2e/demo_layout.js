(view) => {
  document.querySelectorAll("[data-view]").forEach((s) => { s.hidden = s.getAttribute("data-view") !== view; });
  const W = document.documentElement.scrollWidth, H = document.documentElement.scrollHeight;
  const elements = [];
  document.querySelectorAll("a[data-nav],button,#login-button").forEach((el) => {
    const r = el.getBoundingClientRect();
    if (!r.width || el.closest("[data-cs-ignore]")) return;
    const parts = [];
    for (let n = el, i = 0; n && n.nodeType === 1 && i < 5; i++, n = n.parentElement) {
      const t = n.tagName.toLowerCase(), c = n.classList[0];
      if (t === "html" || t === "body") break;
      parts.unshift(t + (n.id ? "#" + CSS.escape(n.id) : c ? "." + CSS.escape(c) : ""));
      if (n.id && n !== el) break;
    }
    const e = { selector: parts.join(" > "), tag: el.tagName.toLowerCase() };
    if (el.id) e.id = el.id;
    if (el.classList.length) e.classes = [...el.classList];
    e.text = el.textContent.replace(/\s+/g, " ").trim().slice(0, 128);
    if (el.dataset.nav) e.nav = el.dataset.nav;
    e.box = [+(r.left / W).toFixed(4), +(r.right / W).toFixed(4), Math.round(r.top + scrollY), Math.round(r.bottom + scrollY)];
    elements.push(e);
  });
  return { height: H, elements };
}
