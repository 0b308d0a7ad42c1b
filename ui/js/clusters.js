// Clusters: the registry with each cluster's cached status; admins add (Test Connection,
// Save), edit (rotate the kubeconfig, change namespaces) and remove (after confirming); anyone
// signed in may run a read command (get, describe, logs) on a cluster through the shell's
// command box, inside its namespace allowlist.
import { api } from './api.js';
import { h, fill, notice, badge, table, td, busy, ago, announce } from './dom.js';
import { start, may } from './layout.js';

const NAME_HELP = 'A DNS label: lower-case letters, digits and -, at most 63 characters.';

/** The namespaces typed as "a, b c" → ["a", "b", "c"]. */
function namespaceList(text) {
  return text.split(/[\s,]+/).map((s) => s.trim()).filter(Boolean);
}

/** A labelled field whose error (if any) is announced with it. */
function field(id, label, control, hint) {
  const error = h('div', { class: 'field-error', id: `${id}-error` });
  control.id = id;
  control.setAttribute('aria-describedby', `${id}-hint ${id}-error`);
  return {
    el: h('div', { class: 'field' },
      h('label', { for: id }, label, ' ', h('span', { class: 'hint', id: `${id}-hint` }, hint || '')),
      control, error),
    control,
    setError(message) {
      fill(error, message || '');
      if (message) control.setAttribute('aria-invalid', 'true');
      else control.removeAttribute('aria-invalid');
    },
  };
}

/** The form checks the API makes too, in the form first so mistakes show beside the field. */
function localErrors(values, editing) {
  const errors = {};
  if (!editing && !/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(values.name)) errors.name = `name: ${NAME_HELP}`;
  if (!values.server_url) errors.server_url = 'server_url: required';
  else if (!values.server_url.startsWith('https://')) errors.server_url = 'server_url: must be an https:// URL (the API refuses anything else)';
  if (!editing && !values.kubeconfig.trim()) errors.kubeconfig = 'kubeconfig: paste a kubeconfig or choose a file';
  return errors;
}

/** The field an API error names (`server_url: …`, `kubeconfig.users[0].user.exec: …`). */
function fieldOf(message) {
  const match = /^([a-z_]+)[.:[]/.exec(message);
  return match ? match[1] : null;
}

/** The add / edit form; `existing` is the cluster being edited. */
function clusterForm(existing, done) {
  const editing = Boolean(existing);
  const result = h('div', { id: 'cluster-form-result', 'aria-live': 'polite' });
  const name = field('cluster-name', 'Name', h('input', { autocomplete: 'off', required: !editing, readonly: editing, spellcheck: 'false' }), NAME_HELP);
  const server = field('cluster-server', 'Server URL', h('input', { type: 'url', inputmode: 'url', placeholder: 'https://staging.example.com:6443', required: true, spellcheck: 'false' }), 'https:// only');
  const kubeconfig = field('cluster-kubeconfig', 'Kubeconfig', h('textarea', { rows: 9, spellcheck: 'false', placeholder: 'apiVersion: v1\nkind: Config\n…' }),
    editing ? 'leave empty to keep the stored one; paste a new one to rotate it' : 'paste it, or choose a file below; exec and auth-provider plugins are refused');
  const file = h('input', { type: 'file', id: 'cluster-kubeconfig-file', accept: '.yaml,.yml,.conf,.kubeconfig,text/*' });
  const namespaces = field('cluster-namespaces', 'Namespaces', h('input', { spellcheck: 'false', placeholder: 'staging, default' }), 'comma-separated allowlist; empty allows every namespace');
  const insecure = h('input', { type: 'checkbox', id: 'cluster-insecure' });
  if (existing) {
    name.control.value = existing.name;
    server.control.value = existing.server_url;
    namespaces.control.value = existing.namespaces.join(', ');
    insecure.checked = Boolean(existing.insecure_tls);
  }
  file.addEventListener('change', async () => {
    const chosen = file.files && file.files[0];
    if (chosen) {
      kubeconfig.control.value = await chosen.text();
      announce(`Kubeconfig read from ${chosen.name}`);
    }
  });
  const fields = { name, server_url: server, kubeconfig, namespaces };
  const values = () => ({
    name: name.control.value.trim(),
    server_url: server.control.value.trim(),
    kubeconfig: kubeconfig.control.value,
    namespaces: namespaceList(namespaces.control.value),
    allow_insecure_tls: insecure.checked,
  });
  const check = (forTest) => {
    const v = values();
    const errors = localErrors(v, editing && !forTest);
    if (forTest && !v.kubeconfig.trim()) errors.kubeconfig = 'kubeconfig: paste a kubeconfig to test (the stored one is never shown)';
    for (const [key, f] of Object.entries(fields)) f.setError(errors[key]);
    const first = Object.keys(fields).find((key) => errors[key]);
    if (first) {
      fields[first].control.focus();
      fill(result, notice('error', 'Check the highlighted fields', Object.values(errors).join('; ')));
      return null;
    }
    return v;
  };
  const apiError = (title, err) => {
    const key = fieldOf(err.message);
    if (fields[key]) fields[key].setError(err.message);
    fill(result, notice('error', title, err.message));
  };
  const testButton = h('button', { type: 'button', id: 'cluster-test' }, 'Test connection');
  testButton.addEventListener('click', () => busy(testButton, async () => {
    const v = check(true);
    if (!v) return;
    fill(result, notice('info', 'Testing the connection…'));
    try {
      const status = await api('POST', '/api/v1/clusters/test', { server_url: v.server_url, kubeconfig: v.kubeconfig, allow_insecure_tls: v.allow_insecure_tls });
      if (status.status === 'connected') {
        fill(result, notice('ok', 'Connected', `Kubernetes ${status.version}, ${status.node_count} node(s). Nothing was stored.`));
      } else {
        fill(result, notice('error', 'Cannot connect', `${status.error}. Nothing was stored.`));
      }
    } catch (err) {
      apiError('The test was refused', err);
    }
  }));
  const save = h('button', { type: 'submit', class: 'primary', id: 'cluster-save' }, editing ? 'Save changes' : 'Save');
  const cancel = h('button', { type: 'button', onclick: () => done(false) }, 'Cancel');
  const form = h('form', { class: 'panel form-panel', id: 'cluster-form', 'aria-labelledby': 'cluster-form-title', novalidate: true },
    h('h2', { id: 'cluster-form-title' }, editing ? `Edit cluster ${existing.name}` : 'Add cluster'),
    h('div', { class: 'grid2' }, name.el, server.el),
    kubeconfig.el,
    h('div', { class: 'field' }, h('label', { for: 'cluster-kubeconfig-file' }, 'Kubeconfig file ', h('span', { class: 'hint' }, 'read in this browser, sent only on Test or Save')), file),
    namespaces.el,
    h('div', { class: 'field' }, h('label', { class: 'check', for: 'cluster-insecure' }, insecure, 'Allow a kubeconfig that skips TLS verification (insecure-skip-tls-verify)')),
    result,
    h('div', { class: 'form-actions' }, testButton, save, cancel));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    busy(save, async () => {
      const v = check(false);
      if (!v) return;
      try {
        if (editing) {
          const change = { server_url: v.server_url, namespaces: v.namespaces, allow_insecure_tls: v.allow_insecure_tls };
          if (v.kubeconfig.trim()) change.kubeconfig = v.kubeconfig;
          await api('PUT', `/api/v1/clusters/${encodeURIComponent(existing.name)}`, change);
        } else {
          await api('POST', '/api/v1/clusters', v);
        }
        done(true, editing ? `Cluster ${v.name} updated.` : `Cluster ${v.name} registered; probing it now.`);
      } catch (err) {
        apiError(editing ? 'The change was refused' : 'The cluster was not registered', err);
      }
    });
  });
  return form;
}

/** The probe's placeholder status (the registry says "not probed yet" until it finishes). */
const NOT_PROBED = 'not probed yet';
/** How often the list is polled (ms), so probes' outcomes appear on their own. */
const POLL_MS = 5000;

function probing(cluster) {
  return cluster.status === 'disconnected' && cluster.error === NOT_PROBED;
}

function namespacesCell(cluster) {
  if (cluster.unrestricted || cluster.namespaces.length === 0) return h('span', { class: 'muted' }, 'all namespaces');
  return cluster.namespaces.join(', ');
}

/**
 * The command box: `get|describe|logs …` on the chosen cluster, run by the server with the
 * cluster's sealed credentials (`POST /api/v1/clusters/NAME/shell/commands`); the answer is
 * shown as text. Returns the panel and a function that refreshes the cluster choices.
 */
function commandBox() {
  const cluster = h('select', { id: 'command-cluster', 'aria-label': 'Cluster to run the command on' });
  const line = h('input', {
    id: 'command-line', type: 'text', autocomplete: 'off', spellcheck: 'false',
    placeholder: 'get pods -n staging', 'aria-label': 'Read command (get, describe or logs)',
  });
  const run = h('button', { type: 'submit', id: 'command-run' }, 'Run');
  const output = h('pre', { id: 'command-output', class: 'command-output', 'aria-live': 'polite', tabindex: '0' });
  const form = h('form', { class: 'command-form', 'aria-label': 'Cluster command' },
    cluster, line, run);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    busy(run, async () => {
      const name = cluster.value;
      const command = line.value.trim();
      if (!name || !command) return;
      try {
        const answer = await api('POST', `/api/v1/clusters/${encodeURIComponent(name)}/shell/commands`, { command });
        fill(output, answer.text);
      } catch (err) {
        fill(output, notice('error', `${name}: ${command}`, err.message));
      }
    });
  });
  const panel = h('section', { class: 'panel command-panel', 'aria-labelledby': 'command-title' },
    h('h2', { id: 'command-title' }, 'Run a read command'),
    h('p', { class: 'muted' }, 'get, describe or logs, through wardn with the cluster\'s own credentials, in its allowed namespaces; every command is audited. For a full kubectl, run wardn clusters shell NAME.'),
    form, output);
  const setClusters = (names) => {
    const chosen = cluster.value;
    fill(cluster, ...names.map((name) => h('option', { value: name }, name)));
    if (names.includes(chosen)) cluster.value = chosen;
    panel.hidden = names.length === 0;
  };
  return { panel, setClusters };
}

start(async (page, me) => {
  const admin = may(me, 'admin');
  const messages = h('div', { id: 'messages' });
  const formSlot = h('div', { id: 'form-slot' });
  const listSlot = h('div', { id: 'cluster-list' });
  const addButton = h('button', { type: 'button', class: 'primary', id: 'add-cluster' }, 'Add cluster');
  const refreshButton = h('button', { type: 'button', id: 'reload-clusters' }, 'Reload');
  const commands = commandBox();

  const closeForm = (changed, message) => {
    fill(formSlot);
    addButton.hidden = !admin;
    if (message) fill(messages, notice('ok', message));
    if (changed) load();
    addButton.focus();
  };
  const openForm = (existing) => {
    fill(messages);
    addButton.hidden = true;
    const form = clusterForm(existing, closeForm);
    fill(formSlot, form);
    form.querySelector(existing ? '#cluster-server' : '#cluster-name').focus();
  };
  addButton.addEventListener('click', () => openForm(null));
  addButton.hidden = !admin;

  const confirmRemove = (cluster, row, trigger) => {
    const yes = h('button', { type: 'button', class: 'danger', id: 'confirm-remove' }, `Remove ${cluster.name}`);
    const no = h('button', { type: 'button' }, 'Keep it');
    const box = h('div', { class: 'confirm', role: 'alertdialog', 'aria-labelledby': 'confirm-text' },
      h('p', { id: 'confirm-text' }, `Remove cluster ${cluster.name}? Its sealed credentials are deleted; Apps deploying to it stop reconciling. Objects on the cluster stay.`),
      h('div', { class: 'form-actions' }, yes, no));
    const cell = row.querySelector('td.actions');
    cell.append(box);
    no.addEventListener('click', () => { box.remove(); trigger.focus(); });
    yes.addEventListener('click', () => busy(yes, async () => {
      try {
        await api('DELETE', `/api/v1/clusters/${encodeURIComponent(cluster.name)}`);
        fill(messages, notice('ok', `Cluster ${cluster.name} removed.`));
        await load();
        addButton.focus();
      } catch (err) {
        box.remove();
        fill(messages, notice('error', `Cluster ${cluster.name} was not removed`, err.message));
      }
    }));
    yes.focus();
  };

  async function load() {
    const data = await api('GET', '/api/v1/clusters');
    const clusters = data.clusters || [];
    commands.setClusters(clusters.map((cluster) => cluster.name));
    const parts = [];
    if (data.declarationErrors && data.declarationErrors.length) {
      parts.push(notice('warn', 'Some declared clusters could not be applied', data.declarationErrors.join('; ')));
    }
    if (clusters.length === 0) {
      parts.push(h('div', { class: 'panel' }, h('p', {}, 'No cluster is registered yet. '),
        h('p', { class: 'muted' }, 'Apps with an empty destination.cluster deploy to the management cluster; register others to deploy there.')));
    } else {
      const columns = ['Name', 'Status', 'Version', 'Nodes', 'Namespaces', 'Credentials expire', 'Last error'];
      if (admin) columns.push('Actions');
      const t = table('Registered clusters', columns, 'clusters-table');
      for (const cluster of clusters) {
        const row = h('tr', { 'data-cluster': cluster.name },
          td('Name', h('strong', {}, cluster.name), h('div', { class: 'muted mono' }, cluster.server_url),
            cluster.declared_in ? h('div', { class: 'hint' }, `declared in ${cluster.declared_in}`) : null,
            cluster.insecure_tls ? h('span', { class: 'badge warn small' }, 'TLS not verified') : null),
          td('Status', badge(probing(cluster) ? 'probing' : cluster.status, 'status')),
          td('Version', cluster.version || h('span', { class: 'muted' }, '—')),
          td('Nodes', cluster.node_count ?? h('span', { class: 'muted' }, '—')),
          td('Namespaces', namespacesCell(cluster)),
          td('Credentials expire', cluster.credential_expires_at ? ago(cluster.credential_expires_at) : h('span', { class: 'muted' }, 'no expiry known')),
          h('td', { class: 'error-cell', 'data-label': 'Last error' }, h('div', { class: 'cell' }, probing(cluster) ? h('span', { class: 'muted' }, 'first probe pending') : cluster.error || '')));
        if (admin) {
          const cell = h('div', { class: 'cell' });
          if (cluster.declared_in) {
            cell.append(h('span', { class: 'hint' }, 'change it in its file'));
          } else {
            const edit = h('button', { type: 'button', class: 'link', 'aria-label': `Edit cluster ${cluster.name}` }, 'Edit');
            const remove = h('button', { type: 'button', class: 'link', 'aria-label': `Remove cluster ${cluster.name}` }, 'Remove');
            edit.addEventListener('click', () => openForm(cluster));
            remove.addEventListener('click', () => confirmRemove(cluster, row, remove));
            cell.append(edit, remove);
          }
          row.append(h('td', { class: 'actions', 'data-label': 'Actions' }, cell));
        }
        t.tbody.append(row);
      }
      parts.push(t.el);
    }
    fill(listSlot, ...parts);
  }

  refreshButton.addEventListener('click', () => busy(refreshButton, load));
  fill(page,
    h('div', { class: 'toolbar' },
      h('p', { class: 'muted', style: null }, 'Clusters wardn deploys to; credentials are sealed at rest and never shown.'),
      h('span', { class: 'spacer' }), refreshButton, addButton),
    messages, formSlot, listSlot, commands.panel);
  await load();
  // Follows probes and other admins' changes, unless the operator is confirming a removal.
  setInterval(() => {
    if (!document.hidden && !listSlot.querySelector('.confirm')) load().catch(() => {});
  }, POLL_MS);
});
