// The review queue's "select every row" box. Served by the app: the console's CSP runs no
// inline script. Without it, each row's checkbox still works on its own.
document.addEventListener("DOMContentLoaded", () => {
  const all = document.getElementById("pick-all");
  if (!all) return;
  const boxes = () => Array.from(document.querySelectorAll("input[name=pick]"));
  all.addEventListener("change", () => boxes().forEach((box) => { box.checked = all.checked; }));
});
