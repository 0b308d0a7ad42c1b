// The audit log (admins): newest first, paged with the API's `before` cursor, filtered by
// action (exact, or a prefix ending in "."), actor and target; the filters live in the address.
import { api } from './api.js';
import { h, fill, notice, table, td, ago, busy } from './dom.js';
import { start } from './layout.js';

const PAGE = 50;
const FILTERS = [
  ['action', 'Action', 'e.g. cluster. or app.approve'],
  ['actor', 'Actor', 'exact user'],
  ['target', 'Target', 'e.g. local/my-app'],
];

start(async (page) => {
  const params = new URLSearchParams(location.search);
  const inputs = Object.fromEntries(FILTERS.map(([key, , placeholder]) => {
    const input = h('input', { id: `filter-${key}`, name: key, placeholder, spellcheck: 'false' });
    input.value = params.get(key) || '';
    return [key, input];
  }));
  const list = h('div', { id: 'audit-list' });
  const pager = h('div', { class: 'pager' });
  const head = h('p', { class: 'hint', id: 'audit-head' });
  /** The cursors of the pages before this one (`null`: the newest page). */
  const cursors = [];
  let before = params.get('before');

  async function load() {
    const query = new URLSearchParams({ limit: String(PAGE) });
    for (const [key, input] of Object.entries(inputs)) if (input.value.trim()) query.set(key, input.value.trim());
    if (before) query.set('before', before);
    const data = await api('GET', `/api/v1/audit?${query}`);
    const entries = [...data.entries].reverse();
    if (!entries.length) {
      fill(list, h('div', { class: 'panel' }, h('p', {}, 'No audit entry matches.')));
    } else {
      const t = table('Audit entries, newest first', ['#', 'When', 'Actor', 'Action', 'Target', 'Outcome'], 'audit-table');
      for (const e of entries) {
        t.tbody.append(h('tr', { 'data-seq': e.seq },
          td('#', h('span', { class: 'mono' }, String(e.seq))),
          td('When', ago(e.at)),
          td('Actor', e.actor),
          td('Action', h('span', { class: 'mono' }, e.action)),
          td('Target', e.target),
          td('Outcome', e.outcome)));
      }
      fill(list, t.el);
    }
    fill(head, data.head ? `Chain head: entry ${data.head.seq}, MAC ${data.head.hash.slice(0, 16)}…` : '');
    const newer = h('button', { type: 'button', id: 'newer', disabled: cursors.length === 0 }, '← Newer');
    const older = h('button', { type: 'button', id: 'older', disabled: !data.next_before }, 'Older →');
    newer.addEventListener('click', () => busy(newer, async () => { before = cursors.pop() || null; await load(); }));
    older.addEventListener('click', () => busy(older, async () => { cursors.push(before); before = String(data.next_before); await load(); }));
    fill(pager, newer, older, h('span', { class: 'muted' }, `${entries.length} entr${entries.length === 1 ? 'y' : 'ies'} on this page`));
  }

  const form = h('form', { class: 'toolbar', role: 'search', 'aria-label': 'Filter the audit log' },
    FILTERS.map(([key, label]) => h('div', {}, h('label', { for: `filter-${key}` }, label), inputs[key])),
    h('button', { type: 'submit', class: 'primary' }, 'Filter'),
    h('button', { type: 'reset' }, 'Clear'));
  const apply = async () => {
    before = null;
    cursors.length = 0;
    const q = new URLSearchParams();
    for (const [key, input] of Object.entries(inputs)) if (input.value.trim()) q.set(key, input.value.trim());
    history.replaceState(null, '', `/ui/audit${q.toString() ? `?${q}` : ''}`);
    try {
      await load();
    } catch (err) {
      fill(list, notice('error', 'Cannot read the audit log', err.message));
    }
  };
  form.addEventListener('submit', (event) => { event.preventDefault(); apply(); });
  form.addEventListener('reset', () => setTimeout(apply));
  fill(page, form, head, list, pager);
  await load();
});
