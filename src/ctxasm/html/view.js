"use strict";
// The assembly view: builds the page from a result JSON (the dict `ctxasm assemble` prints and
// POST /v1/assemble returns). Every value from the result goes into the page as text
// (textContent, append of strings) or as a number; markup is never parsed from data, and a url
// becomes a link only when its scheme is http or https.
const CtxasmView = (() => {
  const REASONS = {
    access_denied: "the principal may not read it",
    empty: "blank text",
    below_threshold: "score under min_score, or no query word found",
    top_k: "ranked beyond top_k",
    duplicate: "repeats a selected passage",
    merged: "an overlapping window stitched into a selected passage",
    over_budget: "did not fit what was left of the budget",
    priority_cutoff: "after the first passage that did not fit under strict priority",
    untokenizable: "an unbroken run no tokenizer counts in linear time",
    injection: "flagged by the injection scan",
    history_trimmed: "an earlier conversation turn that did not fit",
  };
  // Budget sections: [key, label]; the key names the CSS class of the segment.
  const WINDOW_SECTIONS = [
    ["system", "system"],
    ["query", "query"],
    ["history", "history"],
    ["sources", "sources"],
    ["overhead", "format overhead"],
    ["unused", "unused"],
    ["margin", "margin"],
    ["reserved", "reserved output"],
  ];

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (key === "class") node.className = value;
      else node.setAttribute(key, value);
    }
    for (const child of children) {
      if (child !== null && child !== undefined) node.append(child);
    }
    return node;
  }
  const num = (value) => (typeof value === "number" && Number.isFinite(value) ? value : 0);
  const int = (value) => num(value).toLocaleString("en-US");
  const text = (value) => (value === null || value === undefined ? "" : String(value));
  function score(value) {
    return typeof value === "number" && Number.isFinite(value) ? String(+value.toPrecision(4)) : "n/a";
  }
  function percent(part, whole) {
    return whole > 0 ? `${((100 * part) / whole).toFixed(part / whole < 0.01 ? 2 : 1)}%` : "0%";
  }

  function safeLink(url, label) {
    const raw = text(url);
    let parsed = null;
    try {
      parsed = new URL(raw);
    } catch (error) {
      parsed = null;
    }
    if (parsed && (parsed.protocol === "http:" || parsed.protocol === "https:")) {
      return el("a", { href: parsed.href, rel: "noopener noreferrer nofollow" }, label || raw);
    }
    return el("span", {}, label || raw);
  }

  function facts(result, report) {
    const budget = report.budget || {};
    const limit = num(budget.context_window) - num(budget.reserve_output) - num(budget.margin);
    const entries = [
      ["model", text(report.model) || "n/a"],
      ["tokenizer", `${text(report.tokenizer) || "n/a"} (${report.exact_count === false ? "estimate" : "exact"})`],
      ["prompt tokens", `${int(report.total_tokens)} of ${int(limit)}`],
      ["sources tokens", `${int(report.context_tokens)} of ${int(budget.context)}`],
      ["passages", `${int(report.selected)} of ${int(report.considered)} included`],
      ["input cost", typeof report.cost_usd === "number" ? `$${report.cost_usd.toFixed(6)}` : "n/a"],
    ];
    if (report.query_class) entries.push(["query class", text(report.query_class)]);
    const relevance = report.relevance && typeof report.relevance === "object" ? report.relevance : {};
    if (relevance.method) {
      entries.push(["relevance", relevance.note ? `${text(relevance.method)}: ${text(relevance.note)}` : text(relevance.method)]);
    }
    const turn = report.history && typeof report.history === "object" ? report.history.relevance_turn : null;
    if (typeof turn === "number") entries.push(["follow-up", `read with history turn ${int(turn)}`]);
    if (result.id !== undefined && result.id !== null) entries.push(["request id", text(result.id)]);
    const list = el("dl", { class: "facts" });
    for (const [name, value] of entries) list.append(el("div", {}, el("dt", {}, name), el("dd", {}, value)));
    return list;
  }

  function windowSections(report) {
    const budget = report.budget || {};
    const fixed = { system: num(budget.system), query: num(budget.query), history: num(budget.history) };
    const sources = num(report.context_tokens);
    const total = num(report.total_tokens);
    const reserved = num(budget.reserve_output);
    const margin = num(budget.margin);
    const overhead = Math.max(0, total - fixed.system - fixed.query - fixed.history - sources);
    const unused = Math.max(0, num(budget.context_window) - reserved - margin - total);
    const values = { ...fixed, sources, overhead, unused, margin, reserved };
    return WINDOW_SECTIONS.map(([key, label]) => ({ key, label, tokens: values[key] }));
  }

  function bar(sections, name, thin) {
    const whole = Math.max(1, sections.reduce((sum, s) => sum + s.tokens, 0));
    const node = el("div", { class: thin ? "bar thin" : "bar", role: "group", "aria-label": name });
    for (const section of sections) {
      const label = `${section.label}: ${int(section.tokens)} tokens (${percent(section.tokens, whole)})`;
      const props = { class: `seg seg-${section.key}`, title: label, "data-tokens": String(section.tokens) };
      if (section.focusable) Object.assign(props, { tabindex: "0", role: "img", "aria-label": label });
      const segment = el(section.href ? "a" : "span", props);
      if (section.href) {
        // one link per passage: reachable by pointer, kept out of the tab order (the table has them)
        segment.setAttribute("href", section.href);
        segment.setAttribute("tabindex", "-1");
      }
      segment.style.width = `${(100 * section.tokens) / whole}%`;
      node.append(segment);
    }
    return node;
  }

  function budgetSection(report) {
    const sections = windowSections(report).map((s) => ({ ...s, focusable: true }));
    const window = num((report.budget || {}).context_window);
    const legend = el("ul", { class: "legend" });
    for (const s of sections) {
      legend.append(el("li", {}, el("span", { class: `swatch seg-${s.key}`, "aria-hidden": "true" }),
        `${s.label} ${int(s.tokens)}`));
    }
    const prompt = [];
    for (const s of sections.slice(0, 3)) prompt.push({ ...s, focusable: false });
    let shares = 0;
    for (const item of list(report.included)) {
      const tokens = num(item.tokens);
      shares += tokens;
      prompt.push({ key: "passage", label: `${text(item.label)} (${text(item.id)})`, tokens,
        href: `#row-${num(item.position)}` });
    }
    const framing = Math.max(0, num(report.context_tokens) - shares);
    if (framing) prompt.push({ key: "sources", label: "sources framing", tokens: framing });
    prompt.push({ ...sections[4], focusable: false });
    return el("section", { "aria-labelledby": "budget-title" },
      el("h2", { id: "budget-title" }, "Where the budget went"),
      el("p", { class: "muted" }, `The context window: ${int(window)} tokens. Hover or focus a segment for its exact count.`),
      bar(sections, "context window by section", false),
      legend,
      el("h3", {}, `Inside the prompt: ${int(report.total_tokens)} tokens, each passage its own segment`),
      bar(prompt, "prompt by section and passage", true));
  }

  function list(value) {
    return Array.isArray(value) ? value : [];
  }

  function chosen(item, labels) {
    const why = item.chosen;
    if (why && typeof why === "object") {
      const given = typeof why.given_score === "number" ? why.given_score : null;
      const terms = list(why.terms).map(text).filter(Boolean);
      if (why.by === "query") return terms.length ? `covers: ${terms.join(", ")}` : "covers query terms";
      if (why.by === "link") {
        const from = labels.get(text(why.linked_from));
        let said = `linked from ${from ? `[${from}]` : text(why.linked_from) || "an earlier pick"}`;
        if (why.via) said += ` via '${text(why.via)}'`;
        return said;
      }
      if (why.by === "fill") return "fills the budget left";
      if (why.by === "score") return given !== null ? `retriever score ${score(given)}` : `score ${score(item.score)}`;
    }
    return `score ${score(item.score)}`;
  }

  function compression(item) {
    const cut = item.compression;
    if (!cut || typeof cut !== "object") return "";
    return `cut to ${int(cut.kept_sentences)}/${int(cut.sentences)} sentences, ` +
      `${int(cut.kept_tokens)}/${int(cut.original_tokens)} tokens`;
  }

  function table(caption, headers, wide) {
    const head = el("tr", {});
    for (const [name, numeric] of headers) head.append(el("th", { scope: "col", class: numeric ? "num" : "" }, name));
    const body = el("tbody", {});
    const node = el("table", { class: wide ? "wide" : "" }, el("caption", {}, caption), el("thead", {}, head), body);
    return { wrap: el("div", { class: "scroll" }, node), body };
  }

  function includedSection(report, labels) {
    const items = list(report.included);
    const { wrap, body } = table(`${items.length} passages in prompt order`, [
      ["pos", true], ["label", false], ["id", false], ["tokens", true], ["score", true],
      ["source", false], ["why chosen", false], ["flags", false], ["compression", false],
    ], true);
    const rows = document.createDocumentFragment();
    for (const item of items) {
      const position = num(item.position);
      const source = el("td", {});
      if (item.source) source.append(el("div", {}, text(item.source)));
      if (item.url) source.append(el("div", {}, safeLink(item.url)));
      const flags = el("td", {});
      for (const flag of list(item.flags)) flags.append(el("span", { class: "badge" }, text(flag)));
      rows.append(el("tr", { id: `row-${position}`, class: "passage" },
        el("td", { class: "num" }, String(position)),
        el("td", {}, el("a", { href: `#prompt-${position}`, title: "where it sits in the prompt" }, text(item.label))),
        el("td", {}, text(item.id)),
        el("td", { class: "num" }, int(item.tokens)),
        el("td", { class: "num" }, score(item.score)),
        source,
        el("td", { class: "chosen" }, chosen(item, labels)),
        flags,
        el("td", {}, compression(item))));
    }
    body.append(rows);
    const section = el("section", { "aria-labelledby": "included-title" },
      el("h2", { id: "included-title" }, `Included: ${int(items.length)} of ${int(report.considered)}`));
    if (report.no_relevant_context) {
      section.append(el("p", { class: "notice" }, "No relevant context: the prompt tells the model so."));
    }
    section.append(wrap);
    return section;
  }

  function excludedSection(report) {
    const groups = new Map();
    for (const item of list(report.excluded)) {
      const reason = text(item.reason) || "unknown";
      if (!groups.has(reason)) groups.set(reason, []);
      groups.get(reason).push(item);
    }
    const count = list(report.excluded).length;
    const section = el("section", { "aria-labelledby": "excluded-title" },
      el("h2", { id: "excluded-title" }, `Excluded: ${int(count)}, by reason`));
    if (!count) section.append(el("p", { class: "muted" }, "Nothing was left out."));
    for (const [reason, items] of groups) {
      const { wrap, body } = table(`${items.length} excluded as ${reason}`, [["id", false], ["stage", false], ["detail", false]]);
      const rows = document.createDocumentFragment();
      for (const item of items) {
        rows.append(el("tr", { class: "excluded" }, el("td", {}, text(item.id)), el("td", {}, text(item.stage)),
          el("td", {}, text(item.detail))));
      }
      body.append(rows);
      const why = Object.prototype.hasOwnProperty.call(REASONS, reason) ? REASONS[reason] : "";
      const summary = el("summary", {}, `${reason} (${int(items.length)})`);
      if (why) summary.append(el("span", { class: "why" }, ` — ${why}`));
      section.append(el("details", { class: "group", "data-reason": reason }, summary, wrap));
    }
    return section;
  }

  // Source labels ([Source N]) in the prompt become links to their rows; the first one that
  // starts a line or follows a tag is where the passage sits, and gets the anchor its row links to.
  const LABEL = /\[(Source \d{1,9})\]/g;

  function promptText(content, positions, anchored) {
    const node = el("pre", { class: "prompt", tabindex: "0" });
    const body = text(content);
    let last = 0;
    LABEL.lastIndex = 0;
    for (let match = LABEL.exec(body); match !== null; match = LABEL.exec(body)) {
      const position = positions.get(match[1]);
      if (position === undefined) continue;
      node.append(body.slice(last, match.index));
      const link = el("a", { class: "label", href: `#row-${position}` }, match[0]);
      const before = match.index ? body[match.index - 1] : "\n";
      if ((before === "\n" || before === ">") && !anchored.has(position)) {
        anchored.add(position);
        link.id = `prompt-${position}`;
      }
      node.append(link);
      last = match.index + match[0].length;
    }
    node.append(body.slice(last));
    return node;
  }

  function promptSection(result, report) {
    const positions = new Map();
    for (const item of list(report.included)) positions.set(text(item.label), num(item.position));
    const anchored = new Set();
    const section = el("section", { "aria-labelledby": "prompt-title" },
      el("h2", { id: "prompt-title" }, "What the model will see"));
    const parts = [];
    if (typeof result.system === "string") parts.push(["system (sent apart)", result.system]);
    for (const message of list(result.messages)) {
      if (message && typeof message === "object") parts.push([text(message.role) || "message", message.content]);
    }
    if (typeof result.text === "string") parts.push(["text prompt", result.text]);
    if (!parts.length) section.append(el("p", { class: "muted" }, "This file holds the report only, not the prompt."));
    for (const [role, content] of parts) {
      section.append(el("div", { class: "message" }, el("h3", {}, role), promptText(content, positions, anchored)));
    }
    return section;
  }

  function timingsSection(report) {
    const timings = report.timings_ms && typeof report.timings_ms === "object" ? report.timings_ms : {};
    const { wrap, body } = table("milliseconds per stage", [["stage", false], ["ms", true]]);
    for (const [stage, ms] of Object.entries(timings)) {
      body.append(el("tr", {}, el("td", {}, stage), el("td", { class: "num" }, num(ms).toFixed(3))));
    }
    const section = el("section", { "aria-labelledby": "timings-title" }, el("h2", { id: "timings-title" }, "Timings"), wrap);
    const history = report.history;
    if (history && typeof history === "object" && num(history.turns)) {
      section.append(el("p", {}, `History: ${int(history.kept)} of ${int(history.turns)} turns kept, ` +
        `${int(history.tokens)} tokens${num(history.summary_tokens) ? `, summary ${int(history.summary_tokens)} tokens` : ""}.`));
    }
    return section;
  }

  function render(result, root) {
    const data = result && typeof result === "object" ? result : {};
    const report = data.report && typeof data.report === "object" ? data.report : {};
    const labels = new Map();
    for (const item of list(report.included)) labels.set(text(item.id), text(item.label));
    const view = document.createDocumentFragment();
    view.append(facts(data, report), budgetSection(report), includedSection(report, labels),
      excludedSection(report), promptSection(data, report), timingsSection(report));
    root.replaceChildren(view);
    const model = text(report.model);
    if (model) document.title = `ctxasm: ${model}, ${int(report.selected)} of ${int(report.considered)} passages`;
    performance.mark("ctxasm-ready");
  }

  return { render };
})();
