// The JSON API, same origin, with the session cookie. Writes send Content-Type:
// application/json, as the API's CSRF rule requires of cookie-authenticated writes.

/** An API error: the HTTP status and the API's message (`{"error": …}`). */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** The login page, coming back to this page afterwards. */
export function toLogin() {
  const here = location.pathname + location.search;
  location.assign(`/ui/login?next=${encodeURIComponent(here)}`);
}

/**
 * `method path` with `body` (JSON); resolves to the decoded answer, rejects with an ApiError.
 * A 401 (session over) leads to the login page.
 */
export async function api(method, path, body) {
  const init = { method, credentials: 'same-origin', headers: { Accept: 'application/json' } };
  if (method !== 'GET') {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body ?? {});
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (err) {
    throw new ApiError(0, `cannot reach wardn: ${err.message}`);
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (response.status === 401 && !path.startsWith('/api/v1/auth/login')) {
    toLogin();
    throw new ApiError(401, 'session expired; log in again');
  }
  if (!response.ok) {
    const message = (data && data.error) || `${response.status} ${response.statusText}`;
    throw new ApiError(response.status, message);
  }
  return data;
}

/** How the API addresses an App as listed: its name, or `NAME:TARGET` for one target. */
export function addressOf(app) {
  return app.target ? `${app.name}:${app.target}` : app.name;
}

/** `/api/v1/apps/CLUSTER/NAME` + `suffix`, with `?namespace=` when the App needs it. */
export function appPath(app, suffix = '', query = {}) {
  const params = new URLSearchParams(query);
  if (app.namespaceParam) params.set('namespace', app.namespaceParam);
  const q = params.toString();
  return `/api/v1/apps/${encodeURIComponent(app.cluster)}/${encodeURIComponent(app.name)}${suffix}${q ? `?${q}` : ''}`;
}

/** The UI page of an App. */
export function appPage(cluster, name, namespace) {
  const base = `/ui/apps/${encodeURIComponent(cluster)}/${encodeURIComponent(name)}`;
  return namespace ? `${base}?namespace=${encodeURIComponent(namespace)}` : base;
}
