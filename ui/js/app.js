// One App: its status, the objects of its current plan as a tree by kind, the plan's diff
// (Secret values arrive masked from the API), Approve / Reject bound to the hash of the plan
// shown, Sync, Refresh, Promote, the promotion history and the App's events.
import { addressOf, api, appPath } from './api.js';
import { h, fill, notice, badge, ago, short, busy, table, td, announce, abbreviate } from './dom.js';
import { start, may, title } from './layout.js';

/** How often the status is polled (ms). */
const POLL_MS = 3000;

/** The App addressed by this page's path: /ui/apps/CLUSTER/NAME[?namespace=NS]. */
function addressed() {
  const parts = location.pathname.split('/').slice(3).map(decodeURIComponent);
  return {
    cluster: parts[0],
    name: parts[1],
    namespaceParam: new URLSearchParams(location.search).get('namespace') || null,
  };
}

const ACTION_WORDS = { create: ['new', 'info'], update: ['changes', 'warn'], unchanged: ['in sync', 'ok'], prune: ['pruned', 'bad'] };

function actionBadge(action) {
  const [word, kind] = ACTION_WORDS[action] || [action, ''];
  return h('span', { class: `badge small ${kind}`, title: `plan: ${word}` }, word);
}

function objectName(o) {
  return o.namespace ? `${o.namespace}/${o.name}` : o.name;
}

function objectKey(o) {
  return `${o.kind}/${o.namespace || ''}/${o.name}`;
}

/**
 * The plan's objects (and prunes) grouped by kind, each with what the plan does to it and its
 * live health (`health`: objectKey → {health, message}, or an error message).
 */
function objectTree(plan, health) {
  const kinds = new Map();
  const add = (object, action) => {
    if (!kinds.has(object.kind)) kinds.set(object.kind, []);
    kinds.get(object.kind).push({ object, action });
  };
  for (const d of plan.objects) add(d.object, d.action);
  for (const p of plan.prunes) add(p.object, 'prune');
  if (kinds.size === 0) return h('p', { class: 'muted' }, 'The App renders no object.');
  const healthOf = (object) => {
    if (typeof health === 'string') return h('span', { class: 'hint', title: health }, 'health unknown');
    const found = health.get(objectKey(object));
    if (!found) return h('span', { class: 'badge small', title: 'not applied by wardn yet' }, 'not applied');
    const el = badge(found.health, `health of ${object.kind} ${object.name}`);
    if (found.message) el.title = found.message;
    return el;
  };
  return h('div', { class: 'tree', 'aria-label': 'Objects by kind' },
    [...kinds.keys()].sort().map((kind) => {
      const items = kinds.get(kind);
      return h('details', { open: true },
        h('summary', {}, kind, h('span', { class: 'count' }, String(items.length))),
        h('ul', { 'aria-label': `${kind} objects` }, items.map(({ object, action }) =>
          h('li', { 'data-object': objectKey(object) },
            h('span', { class: 'name' }, objectName(object)),
            h('span', { class: 'muted mono' }, object.apiVersion),
            actionBadge(action),
            healthOf(object)))));
    }));
}

/** The unified diff as lines, each coloured by its first character. */
function diffView(text) {
  if (!text.trim()) return h('p', { class: 'muted', id: 'diff-empty' }, 'No difference: the cluster matches the rendered revision.');
  const lines = text.replace(/\n$/, '').split('\n').map((line) => {
    const kind = line.startsWith('+++ ') || line.startsWith('--- ') ? 'file'
      : line.startsWith('+') ? 'add' : line.startsWith('-') ? 'del' : line.startsWith('@@') ? 'hunk' : line.startsWith('#') ? 'note' : '';
    return h('span', { class: kind }, line);
  });
  return h('pre', { class: 'diff', id: 'diff', tabindex: '0', 'aria-label': 'Diff of the plan' }, lines);
}

function facts(app) {
  const s = app.status;
  const plan = s.plan;
  return h('dl', { class: 'facts' },
    h('div', {}, h('dt', {}, 'Phase'), h('dd', {}, badge(app.phase, 'phase'))),
    h('div', {}, h('dt', {}, 'Health'), h('dd', {}, badge(s.health, 'health'))),
    h('div', {}, h('dt', {}, 'Cluster'), h('dd', {}, app.cluster)),
    h('div', {}, h('dt', {}, 'Namespace'), h('dd', {}, app.destinationNamespace)),
    app.operator ? h('div', {}, h('dt', {}, 'Operator'), h('dd', { id: 'app-operator', class: 'mono' }, app.operator)) : null,
    h('div', {}, h('dt', {}, 'Revision'), h('dd', {}, short(s.revision, 12))),
    h('div', {}, h('dt', {}, 'Synced revision'), h('dd', {}, short(s.syncedRevision, 12))),
    h('div', {}, h('dt', {}, 'Last sync'), h('dd', {}, ago(s.lastSyncedAt))),
    h('div', {}, h('dt', {}, 'Last plan'), h('dd', {}, plan ? `${plan.creates} new, ${plan.updates} changed, ${plan.prunes} pruned, ${plan.unchanged} in sync` : '—')),
    s.message ? h('div', {}, h('dt', {}, 'Message'), h('dd', { id: 'app-message', title: s.message }, abbreviate(s.message))) : null,
    s.promotedFrom ? h('div', {}, h('dt', {}, 'Pinned by'), h('dd', {}, `promotion from ${s.promotedFrom.cluster}/${s.promotedFrom.app}`)) : null);
}

function promotionsView(data, me, app, act) {
  const list = data.promotions || [];
  if (!list.length) return h('p', { class: 'muted' }, 'No promotion into this App yet.');
  const columns = ['When', 'From', 'Revision', 'Images', 'By', 'Outcome'];
  const rollback = may(me, 'approver');
  if (rollback) columns.push('Actions');
  const t = table('Promotions into this App', columns, 'promotions-table');
  for (const p of list) {
    const row = h('tr', {},
      td('When', ago(p.createdAt)),
      td('From', p.source),
      td('Revision', short(p.revision, 12)),
      td('Images', p.images.length ? p.images.map((i) => h('div', { class: 'mono' }, `${i.repository}@${i.digest.slice(0, 19)}…`)) : h('span', { class: 'muted' }, 'none')),
      td('By', p.actor),
      td('Outcome', p.outcome));
    if (rollback) {
      const button = h('button', { type: 'button', class: 'link', 'aria-label': `Roll back to promotion ${p.id}`, disabled: !p.images.length }, 'Roll back to this');
      button.addEventListener('click', () => act(button, `Rollback to promotion ${p.id}`, () => api('POST', appPath(app, '/rollback', { to: String(p.id) }))));
      row.append(h('td', { class: 'actions', 'data-label': 'Actions' }, button));
    }
    t.tbody.append(row);
  }
  return t.el;
}

function eventsView(data) {
  const list = data.events || [];
  if (!list.length) return h('p', { class: 'muted' }, 'No event recorded for this App yet.');
  return h('ul', { class: 'events' }, list.map((e) =>
    h('li', {}, ago(e.at), h('span', {}, h('strong', {}, e.action), ' ', h('span', { class: 'muted' }, `by ${e.actor}`)),
      h('span', { class: 'outcome', title: e.outcome }, abbreviate(e.outcome)))));
}

start(async (page, me) => {
  const app = addressed();
  title(`${app.name}`);
  const messages = h('div', { id: 'messages' });
  const summary = h('section', { class: 'panel', 'aria-label': 'Status' });
  const held = h('div', { id: 'held' });
  const diffSlot = h('div', { id: 'diff-slot' }, h('p', { class: 'muted' }, 'Computing the plan…'));
  const treeSlot = h('div', { id: 'tree-slot' });
  const promotionsSlot = h('div', { id: 'promotions-slot' });
  const eventsSlot = h('div', { id: 'events-slot' });
  let current = null;
  let shownHash = null;
  let polledPhase = null;

  /** Runs an action, shows its outcome, reloads the page's data. */
  const act = (button, what, call) => busy(button, async () => {
    fill(messages, notice('info', `${what}…`));
    try {
      const answer = await call();
      const phase = answer && answer.status && answer.status.phase;
      fill(messages, notice('ok', `${what}: done`, phase ? `The App is now ${phase}.` : null));
      announce(`${what} done`);
    } catch (err) {
      fill(messages, notice('error', `${what} was refused`, err.message));
      if (err.status === 409 && what === 'Sync' && /window/i.test(err.message)) {
        const override = h('button', { type: 'button', class: 'danger' }, 'Sync anyway (override the window)');
        override.addEventListener('click', () => act(override, 'Sync overriding the window', () => api('POST', appPath(app, '/sync'), { override_window: true })));
        messages.append(override);
      }
    }
    await loadAll();
  });

  const buttons = () => {
    const bar = h('div', { class: 'actions-bar' });
    if (may(me, 'deployer')) {
      const sync = h('button', { type: 'button', class: 'primary', id: 'sync' }, 'Sync');
      sync.addEventListener('click', () => act(sync, 'Sync', () => api('POST', appPath(app, '/sync'))));
      const refresh = h('button', { type: 'button', id: 'refresh' }, 'Refresh');
      refresh.title = 'Fetch the source now and dry-run every object';
      refresh.addEventListener('click', () => act(refresh, 'Refresh', () => api('POST', appPath(app, '/refresh'))));
      bar.append(sync, refresh);
    }
    if (may(me, 'approver')) {
      const target = h('input', { id: 'promote-to', list: 'promote-targets', placeholder: 'CLUSTER/NAME', spellcheck: 'false', size: 22 });
      const options = h('datalist', { id: 'promote-targets' });
      api('GET', '/api/v1/apps').then((data) => {
        for (const other of data.apps) {
          if (other.cluster === app.cluster && addressOf(other) === app.name) continue;
          options.append(h('option', { value: `${other.cluster}/${addressOf(other)}` }));
        }
      }).catch(() => {});
      const promote = h('button', { type: 'button', id: 'promote' }, 'Promote');
      promote.addEventListener('click', () => {
        if (!target.value.trim()) {
          target.setAttribute('aria-invalid', 'true');
          fill(messages, notice('error', 'Promote: name the target App', 'to: give CLUSTER/NAME or NAME of the App to promote onto'));
          target.focus();
          return;
        }
        target.removeAttribute('aria-invalid');
        act(promote, `Promotion to ${target.value.trim()}`, () => api('POST', appPath(app, '/promote', { to: target.value.trim() })));
      });
      bar.append(h('span', { class: 'row' }, h('label', { for: 'promote-to', class: 'visually-hidden' }, 'Promote to App'), target, options, promote));
    }
    return bar;
  };

  const heldPanel = () => {
    const s = current.status;
    if (current.phase !== 'Held') return null;
    const parts = [h('h2', {}, 'Waiting for approval'),
      h('p', {}, 'Plan ', short(s.planHash, 16), ' is Held', s.heldAt ? [' since ', ago(s.heldAt)] : null,
        '. Review the objects and the diff below, then approve or reject exactly that plan.')];
    if (shownHash && s.planHash && shownHash !== s.planHash) {
      parts.push(notice('warn', 'The diff below is of a newer plan than the Held one', 'Approving it is refused until the new plan is Held; Refresh to hold it.'));
    }
    if (may(me, 'approver')) {
      const approve = h('button', { type: 'button', class: 'good', id: 'approve', disabled: !shownHash }, 'Approve this plan');
      const reject = h('button', { type: 'button', class: 'danger', id: 'reject', disabled: !shownHash }, 'Reject');
      approve.setAttribute('aria-describedby', 'bound-hash');
      reject.setAttribute('aria-describedby', 'bound-hash');
      approve.addEventListener('click', () => act(approve, 'Approval', () => api('POST', appPath(app, '/approve'), { plan_hash: shownHash })));
      reject.addEventListener('click', () => act(reject, 'Rejection', () => api('POST', appPath(app, '/reject'), { plan_hash: shownHash })));
      parts.push(h('div', { class: 'actions-bar' }, approve, reject,
        h('span', { class: 'hint', id: 'bound-hash' }, shownHash ? `bound to the plan shown below, ${shownHash.slice(0, 16)}` : 'the diff is loading')));
    }
    return h('section', { class: 'panel held', 'aria-label': 'Approval' }, parts);
  };

  const drawStatus = () => {
    fill(summary, facts(current), buttons());
    fill(held, heldPanel());
  };

  async function loadDiff() {
    try {
      const answer = await api('GET', appPath(app, '/diff'));
      shownHash = answer.plan.plan_hash;
      fill(diffSlot, h('p', { class: 'hint' }, 'Plan ', short(shownHash, 16), ` of revision ${(answer.plan.revision || '').slice(0, 12)}; Secret values are masked.`), diffView(answer.text));
      const health = await api('GET', appPath(app, '/resources'))
        .then((data) => new Map(data.resources.map((r) => [objectKey(r.object), r])))
        .catch((err) => err.message);
      fill(treeSlot, objectTree(answer.plan, health));
    } catch (err) {
      shownHash = null;
      fill(diffSlot, notice('error', 'No plan can be shown', err.message));
      fill(treeSlot, h('p', { class: 'muted' }, 'The objects come from the plan, which cannot be computed now.'));
    }
  }

  async function loadAll() {
    current = await api('GET', appPath(app));
    polledPhase = current.phase;
    // The facts first: the diff is computed by the App's cluster (or its operator) and may
    // take a while; the approval panel waits for it (it binds the plan shown).
    drawStatus();
    await loadDiff();
    fill(held, heldPanel());
    const [promotions, events] = await Promise.all([
      api('GET', appPath(app, '/promotions')).catch((err) => ({ error: err.message })),
      api('GET', appPath(app, '/events')).catch((err) => ({ error: err.message })),
    ]);
    fill(promotionsSlot, promotions.error ? notice('error', promotions.error) : promotionsView(promotions, me, app, act));
    fill(eventsSlot, events.error ? notice('error', events.error) : eventsView(events));
  }

  fill(page,
    h('p', {}, h('a', { href: '/ui/apps' }, '← All Apps')),
    messages, summary, held,
    h('section', { 'aria-labelledby': 'objects-title' }, h('h2', { id: 'objects-title' }, 'Objects'), treeSlot),
    h('section', { 'aria-labelledby': 'diff-title' }, h('h2', { id: 'diff-title' }, 'Diff'), diffSlot),
    h('section', { 'aria-labelledby': 'promotions-title' }, h('h2', { id: 'promotions-title' }, 'Promotion history'), promotionsSlot),
    h('section', { 'aria-labelledby': 'events-title' }, h('h2', { id: 'events-title' }, 'Events'), eventsSlot));
  await loadAll();

  // Live updates: when the phase or the plan changes elsewhere, the page follows.
  setInterval(async () => {
    if (document.hidden) return;
    try {
      const next = await api('GET', appPath(app));
      const changed = next.phase !== polledPhase || next.status.planHash !== current.status.planHash || next.status.revision !== current.status.revision;
      current = next;
      if (changed) {
        polledPhase = next.phase;
        await loadDiff();
        drawStatus();
        announce(`The App is now ${next.phase}`);
      }
    } catch {
      // The next poll tries again; actions report their own errors.
    }
  }, POLL_MS);
});
