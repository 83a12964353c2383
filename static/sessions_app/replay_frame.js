// The session timeline page's side of the replay player (docs/replay.md): the player runs
// in its own frame (session_player.html, whose policy allows the recorded page's inline
// styles; this page's does not). The frame tells its height (the frame is sized to it,
// through the CSSOM: no inline style) and when the player is ready (#replay.ready); the
// ▶ button of a timeline row asks it to play from that event. Messages of this origin
// and that frame only.
(function () {
  "use strict";
  var root = document.getElementById("replay");
  var frame = root && root.querySelector("iframe.replay-frame");
  if (!frame) return;
  window.addEventListener("message", function (ev) {
    if (ev.origin !== location.origin || ev.source !== frame.contentWindow || !ev.data) return;
    if (ev.data.height > 0) frame.style.height = ev.data.height + "px";
    if (ev.data.ready) root.classList.add("ready");
  });
  document.addEventListener("click", function (ev) {
    var button = ev.target.closest && ev.target.closest("button.seek");
    if (!button || !frame.contentWindow) return;
    frame.contentWindow.postMessage({ seek: +button.getAttribute("data-ms") }, location.origin);
    root.scrollIntoView({ block: "nearest" });
  });
})();
