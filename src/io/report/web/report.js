"use strict";
// Draws the report from the JSON document in #report-data (docs/report-and-dashboard.md).
(function () {
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const main = document.getElementById("report");
  const h1 = document.createElement("h1");
  h1.textContent = (data.session.recipe_name || "run") + " — " + data.session.status;
  main.replaceChildren(h1);
})();
