"use strict";
// The playground: pick an example or write a request; Run posts it to /v1/assemble (with the
// API key, when the service needs one) and the same view as the HTML report draws the answer.
(() => {
  const config = JSON.parse(document.getElementById("ctxasm-data").textContent);
  const picker = document.getElementById("example");
  const editor = document.getElementById("request");
  const key = document.getElementById("api-key");
  const run = document.getElementById("run");
  const status = document.getElementById("status");
  const view = document.getElementById("view");
  const examples = config.examples && typeof config.examples === "object" ? config.examples : {};
  for (const name of Object.keys(examples)) {
    const option = document.createElement("option");
    option.value = name;
    option.textContent = name;
    picker.append(option);
  }
  document.getElementById("key-row").hidden = !config.key_required;

  function load() {
    editor.value = JSON.stringify(examples[picker.value], null, 2);
  }
  function say(message, failed) {
    status.textContent = message;
    status.className = failed ? "error" : "";
  }

  async function submit() {
    const headers = { "content-type": "application/json" };
    if (key.value) headers["x-api-key"] = key.value;
    run.disabled = true;
    say("Assembling…", false);
    try {
      const response = await fetch(config.endpoint, { method: "POST", headers, body: editor.value });
      const answer = await response.json();
      if (!response.ok) {
        const error = (answer && answer.error) || {};
        const field = error.field ? ` [${error.field}]` : "";
        say(`${response.status}: ${error.message || "the request failed"}${field}`, true);
        return;
      }
      CtxasmView.render(answer, view);
      const report = answer.report || {};
      say(`Assembled: ${report.selected} of ${report.considered} passages, ${report.total_tokens} tokens.`, false);
    } catch (error) {
      say(`The service did not answer: ${error.message}`, true);
    } finally {
      run.disabled = false;
    }
  }

  picker.addEventListener("change", load);
  document.getElementById("request-form").addEventListener("submit", (event) => {
    event.preventDefault();
    submit();
  });
  editor.addEventListener("keydown", (event) => {
    if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
      event.preventDefault();
      submit();
    }
  });
  load();
})();
