"use strict";
// The report page: render the result embedded in the page's data island.
CtxasmView.render(
  JSON.parse(document.getElementById("ctxasm-data").textContent),
  document.getElementById("view"),
);
