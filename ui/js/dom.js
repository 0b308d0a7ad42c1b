// DOM helpers. Every value from the API reaches the page as text (textContent or an attribute
// set through setAttribute), never as HTML: names, messages and diffs cannot inject markup.

/** An element `tag` with `attrs` (on* keys become listeners) and `children` (strings become text). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') {
      el.addEventListener(key.slice(2), value);
    } else if (key === 'class') {
      el.className = value;
    } else if (value === true) {
      el.setAttribute(key, '');
    } else {
      el.setAttribute(key, String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces the children of `el` with `children`. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** Says `message` to screen readers (the page's polite live region). */
export function announce(message) {
  const live = document.getElementById('live');
  if (live) live.textContent = message;
}

/** An error or success notice; `role=alert` for errors so they are read out at once. */
export function notice(kind, title, detail) {
  return h('div', { class: `notice ${kind}`, role: kind === 'error' ? 'alert' : 'status' },
    detail ? h('strong', {}, title) : title, detail || null);
}

const BADGES = {
  Synced: 'ok', Healthy: 'ok', Connected: 'ok', connected: 'ok', success: 'ok',
  Held: 'warn', Waiting: 'warn', OutOfSync: 'warn', Progressing: 'info', probing: 'info',
  Degraded: 'bad', Failed: 'bad', disconnected: 'bad', Disconnected: 'bad', Missing: 'bad',
};

/** A status badge for `word` (a phase, health or connectivity); `label` names what it is. */
export function badge(word, label) {
  const text = word || 'Unknown';
  return h('span', { class: `badge ${BADGES[text] || ''}`, title: label ? `${label}: ${text}` : null }, text);
}

/** Updates a badge made by `badge` in place (no new node: no layout shift, no focus loss). */
export function setBadge(el, word, label) {
  const text = word || 'Unknown';
  if (el.textContent !== text) el.textContent = text;
  el.className = `badge ${BADGES[text] || ''}`;
  if (label) el.title = `${label}: ${text}`;
}

/** `iso` as "3 min ago" (the exact time in the title). */
export function ago(iso) {
  if (!iso) return h('span', { class: 'muted' }, '—');
  return h('time', { datetime: iso, title: iso }, relative(iso));
}

/** The relative wording of `ago`. */
export function relative(iso) {
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return iso;
  const seconds = Math.round((Date.now() - then) / 1000);
  const future = seconds < 0;
  const s = Math.abs(seconds);
  const [n, unit] = s < 60 ? [s, 's'] : s < 3600 ? [Math.floor(s / 60), 'min'] : s < 86400 ? [Math.floor(s / 3600), 'h'] : [Math.floor(s / 86400), 'd'];
  return future ? `in ${n} ${unit}` : `${n} ${unit} ago`;
}

/** A short form of a commit id or hash (the whole one in the title). */
export function short(id, length = 10) {
  if (!id) return h('span', { class: 'muted' }, '—');
  const text = id.startsWith('sha256:') ? id.slice(0, 7 + length) : id.slice(0, length);
  return h('span', { class: 'mono', title: id }, text);
}

/** A table (CSS class `kind`) with `columns` (header labels); rows go in the returned `tbody`. */
export function table(caption, columns, kind) {
  const tbody = h('tbody');
  const el = h('table', { class: `rows ${kind}` },
    h('caption', { class: 'visually-hidden' }, caption),
    h('thead', {}, h('tr', {}, columns.map((c) => h('th', { scope: 'col' }, c)))),
    tbody);
  return { el, tbody };
}

/** A cell labelled `label` (narrow screens show the label beside the value). */
export function td(label, ...children) {
  return h('td', { 'data-label': label }, h('div', { class: 'cell' }, ...children));
}

/** `text` with long hex runs (plan hashes, digests) cut to their first 12 characters. */
export function abbreviate(text) {
  return (text || '').replace(/[0-9a-f]{24,}/g, (hex) => `${hex.slice(0, 12)}…`);
}

/** A revision: a commit id's first 10 characters, or `sha256:` and 8 of a digest. */
export function revisionText(revision) {
  if (!revision) return '—';
  return revision.startsWith('sha256:') ? revision.slice(0, 15) : revision.slice(0, 10);
}

/** Disables `button` while `work` runs. */
export async function busy(button, work) {
  button.disabled = true;
  try {
    return await work();
  } finally {
    button.disabled = false;
  }
}
