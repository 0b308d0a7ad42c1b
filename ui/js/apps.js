// Apps: every App grouped by destination cluster, with phase and health badges, revision
// and last sync (and, on a --role server process, the operator reconciling each); filters by cluster and phase (kept in the address); polled every few
// seconds and updated in place (rows keep their place and size: no layout shift).
import { addressOf, api, appPage } from './api.js';
import { h, fill, notice, badge, setBadge, table, td, relative, announce, abbreviate, revisionText } from './dom.js';
import { start } from './layout.js';

const PHASES = ['Synced', 'OutOfSync', 'Progressing', 'Held', 'Waiting', 'Degraded', 'Failed'];
/** How often the list is polled (ms). */
const POLL_MS = 3000;

function key(app) {
  return `${app.cluster}\u0000${app.namespace || ''}\u0000${addressOf(app)}`;
}

/** The page of an App, with `?namespace=` (always given: it never hurts, and disambiguates). */
function pageOf(app) {
  return appPage(app.cluster, addressOf(app), app.namespace);
}

/** A row whose cells `update` rewrites in place. */
function appRow(app) {
  const phase = badge(app.phase, 'phase');
  const health = badge(app.status.health, 'health');
  const revision = h('span', { class: 'mono' });
  const synced = h('time');
  const message = h('span', { class: 'muted' });
  // On a --role server process: the operator (replica id) that reconciles the App.
  const operator = h('span', { class: 'operator' });
  const row = h('tr', { 'data-app': `${app.cluster}/${addressOf(app)}` },
    td('App', h('a', { href: pageOf(app) }, addressOf(app)), h('div', { class: 'hint' }, `${app.namespace || ''} → ${app.destinationNamespace}`, operator)),
    td('Phase', phase),
    td('Health', health),
    td('Revision', revision),
    td('Last sync', synced),
    td('Message', message));
  const update = (next) => {
    setBadge(phase, next.phase, 'phase');
    setBadge(health, next.status.health, 'health');
    const rev = next.status.revision || '';
    revision.textContent = revisionText(rev);
    revision.title = rev;
    const at = next.status.lastSyncedAt;
    synced.textContent = at ? relative(at) : '—';
    if (at) synced.setAttribute('datetime', at);
    synced.title = at || 'never synced';
    operator.textContent = next.operator ? ` · operator ${next.operator}` : '';
    message.textContent = abbreviate(next.status.message);
    message.title = next.status.message || '';
  };
  update(app);
  return { row, update };
}

start(async (page) => {
  const params = new URLSearchParams(location.search);
  const clusterFilter = h('select', { id: 'filter-cluster' }, h('option', { value: '' }, 'All clusters'));
  const phaseFilter = h('select', { id: 'filter-phase' }, h('option', { value: '' }, 'All phases'),
    PHASES.map((p) => h('option', { value: p }, p)));
  phaseFilter.value = params.get('phase') || '';
  const stamp = h('span', { class: 'muted', id: 'updated' });
  const problems = h('div', { id: 'app-errors' });
  const groups = h('div', { id: 'app-groups' });
  const rows = new Map();
  let shape = null; // null: nothing drawn yet, so an empty list still draws its panel

  const knownClusters = new Set();
  const addClusterOption = (name) => {
    if (knownClusters.has(name)) return;
    knownClusters.add(name);
    clusterFilter.append(h('option', { value: name }, name === 'local' ? 'local (management)' : name));
  };
  try {
    const registered = await api('GET', '/api/v1/clusters');
    ['local', ...registered.clusters.map((c) => c.name)].forEach(addClusterOption);
  } catch {
    addClusterOption('local');
  }
  if (params.get('cluster')) addClusterOption(params.get('cluster'));
  clusterFilter.value = params.get('cluster') || '';

  /** Rebuilds the groups when the set of Apps changes; otherwise updates the rows in place. */
  async function refresh() {
    const query = new URLSearchParams();
    if (clusterFilter.value) query.set('cluster', clusterFilter.value);
    if (phaseFilter.value) query.set('phase', phaseFilter.value);
    const q = query.toString();
    const data = await api('GET', `/api/v1/apps${q ? `?${q}` : ''}`);
    const apps = data.apps || [];
    fill(problems, (data.errors || []).length ? notice('warn', 'Some App files could not be loaded', data.errors.join('; ')) : null);
    const nextShape = apps.map(key).join('\n');
    if (nextShape !== shape) {
      shape = nextShape;
      rows.clear();
      const byCluster = new Map();
      for (const app of apps) {
        addClusterOption(app.cluster);
        if (!byCluster.has(app.cluster)) byCluster.set(app.cluster, []);
        byCluster.get(app.cluster).push(app);
      }
      const sections = [...byCluster.keys()].sort().map((cluster) => {
        const list = byCluster.get(cluster);
        const t = table(`Apps on cluster ${cluster}`, ['App', 'Phase', 'Health', 'Revision', 'Last sync', 'Message'], 'apps-table');
        for (const app of list) {
          const made = appRow(app);
          rows.set(key(app), made);
          t.tbody.append(made.row);
        }
        const id = `cluster-${cluster.replace(/[^a-z0-9-]/gi, '_')}`;
        return h('section', { class: 'cluster-group', 'aria-labelledby': id },
          h('h2', { id }, cluster === 'local' ? 'local (management cluster)' : cluster, h('span', { class: 'count' }, String(list.length))),
          t.el);
      });
      const empty = data.reconciles_apps === false
        ? h('div', { class: 'panel', id: 'apps-elsewhere' },
          h('p', {}, 'This wardn server reconciles no Apps (--role server).'),
          h('p', { class: 'muted' }, 'Its operators reconcile the Apps and report them here; none has reported any yet.'))
        : h('div', { class: 'panel' },
          h('p', {}, clusterFilter.value || phaseFilter.value ? 'No App matches these filters.' : 'No App yet.'),
          h('p', { class: 'muted' }, 'Apps come from App resources in the management cluster or from files in the --apps directory.'));
      fill(groups, sections.length ? sections : empty);
    } else {
      for (const app of apps) rows.get(key(app))?.update(app);
    }
    stamp.textContent = `Updated ${new Date().toLocaleTimeString()}`;
  }

  const changed = () => {
    const query = new URLSearchParams();
    if (clusterFilter.value) query.set('cluster', clusterFilter.value);
    if (phaseFilter.value) query.set('phase', phaseFilter.value);
    const q = query.toString();
    history.replaceState(null, '', `/ui/apps${q ? `?${q}` : ''}`);
    shape = null; // the empty panel's words depend on the filters
    refresh().then(() => announce(`${rows.size} App(s) shown`));
  };
  clusterFilter.addEventListener('change', changed);
  phaseFilter.addEventListener('change', changed);

  fill(page,
    h('div', { class: 'toolbar', role: 'search', 'aria-label': 'Filter Apps' },
      h('div', {}, h('label', { for: 'filter-cluster' }, 'Cluster'), clusterFilter),
      h('div', {}, h('label', { for: 'filter-phase' }, 'Phase'), phaseFilter),
      h('span', { class: 'spacer' }), stamp),
    problems, groups);
  await refresh();
  let failing = false;
  setInterval(async () => {
    if (document.hidden) return;
    try {
      await refresh();
      if (failing) fill(problems);
      failing = false;
    } catch (err) {
      failing = true;
      fill(problems, notice('error', 'Live updates paused', err.message));
    }
  }, POLL_MS);
});
