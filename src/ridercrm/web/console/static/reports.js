// The day sheet's error summary: following a link to a broken row puts the keyboard
// focus on that row's control (without this script the link still scrolls to it).
document.addEventListener("click", function (event) {
  var link = event.target.closest ? event.target.closest(".summary a[href^='#']") : null;
  if (!link) { return; }
  var target = document.getElementById(link.getAttribute("href").slice(1));
  if (!target) { return; }
  event.preventDefault();
  target.focus();
  target.scrollIntoView({ block: "center" });
});
