// The page frame: the header (navigation, the signed-in user, logout) and the page's start.
import { api, ApiError } from './api.js';
import { h, fill, notice } from './dom.js';

const ROLES = ['viewer', 'deployer', 'approver', 'admin'];

/** Whether the signed-in user (`me`) acts with at least `role`. */
export function may(me, role) {
  return ROLES.indexOf(me.role) >= ROLES.indexOf(role);
}

const NAV = [
  ['/ui/apps', 'Apps', 'viewer'],
  ['/ui/clusters', 'Clusters', 'viewer'],
  ['/ui/audit', 'Audit log', 'admin'],
];

function header(me) {
  const top = document.getElementById('top');
  const here = location.pathname;
  const links = NAV.filter(([, , role]) => may(me, role)).map(([href, label]) =>
    h('li', {}, h('a', { href, 'aria-current': here === href || (href === '/ui/apps' && here.startsWith('/ui/apps/')) ? 'page' : null }, label)));
  const logout = h('button', { type: 'button', onclick: signOut }, 'Log out');
  top.append(
    h('nav', { 'aria-label': 'Main' }, h('ul', {}, links)),
    h('div', { class: 'who' },
      h('span', {}, h('span', { class: 'visually-hidden' }, 'Signed in as '), h('strong', { id: 'username' }, me.username), ' ',
        h('span', { class: 'role', title: 'role' }, me.role)),
      logout));
}

async function signOut(event) {
  event.target.disabled = true;
  try {
    await api('POST', '/api/v1/auth/logout');
  } finally {
    location.assign('/ui/login');
  }
}

/**
 * Starts a page: finds who is signed in (the login page when nobody is), draws the header,
 * then `render(pageElement, me)`. An error is shown in the page.
 */
export async function start(render) {
  const page = document.getElementById('page');
  let me;
  try {
    me = await api('GET', '/api/v1/auth/me');
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 401)) fill(page, notice('error', 'Cannot load this page', err.message));
    return;
  }
  header(me);
  try {
    await render(page, me);
  } catch (err) {
    fill(page, notice('error', 'Cannot load this page', err.message));
  } finally {
    page.removeAttribute('aria-busy');
  }
}

/** Sets the page's heading and the document title. */
export function title(text) {
  document.getElementById('title').textContent = text;
  document.title = `${text} · wardn`;
}
