// The login page: username and password against POST /api/v1/auth/login (session cookie).
import { api } from './api.js';
import { h, fill, notice } from './dom.js';

/** Where to go after logging in: `?next=` when it is a UI page of this site, else the Apps. */
function next() {
  const wanted = new URLSearchParams(location.search).get('next') || '';
  return /^\/ui\/[A-Za-z0-9/_.~%?&=-]*$/.test(wanted) && !wanted.startsWith('//') ? wanted : '/ui/apps';
}

function render() {
  const page = document.getElementById('page');
  const message = h('div', { id: 'login-error' });
  const username = h('input', { id: 'username', name: 'username', autocomplete: 'username', required: true, autofocus: true });
  const password = h('input', { id: 'password', name: 'password', type: 'password', autocomplete: 'current-password', required: true });
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Sign in');
  const form = h('form', { class: 'login-card', 'aria-labelledby': 'title', novalidate: true },
    message,
    h('div', { class: 'field' }, h('label', { for: 'username' }, 'Username'), username),
    h('div', { class: 'field' }, h('label', { for: 'password' }, 'Password'), password),
    submit);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    fill(message);
    if (!username.value || !password.value) {
      fill(message, notice('error', 'Enter your username and password.'));
      return;
    }
    submit.disabled = true;
    try {
      await api('POST', '/api/v1/auth/login', { username: username.value, password: password.value });
      location.assign(next());
    } catch (err) {
      fill(message, notice('error', err.message));
      password.select();
      submit.disabled = false;
    }
  });
  fill(page, form, h('p', { class: 'muted', style: null }, 'wardn — GitOps for many clusters'));
  page.removeAttribute('aria-busy');
  username.focus();
}

render();
