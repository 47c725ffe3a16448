// The console's one way to the service: every data call carries the signed-in user's token
// (the server decides what that user may see; the console only hides what it would refuse).
// A 401 means the token expired or was revoked: the session ends and the sign-in form returns.

const TOKEN_KEY = 'historian.console.token';

export class ApiError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

export interface Session {
  token: string;
  email: string;
  role: 'admin' | 'read-write' | 'read-only';
}

type Query = Record<string, string | number | boolean | string[] | null | undefined>;

export function queryString(query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === null || value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) params.append(key, v);
    else params.append(key, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

/** The error text of a failed answer: `{error}`, `{message}`, or the status line. */
async function errorOf(response: Response): Promise<ApiError> {
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = await response.json() as { error?: unknown; message?: unknown };
    if (typeof body.error === 'string') message = body.error;
    else if (typeof body.message === 'string') message = body.message;
  } catch { /* not JSON */ }
  return new ApiError(response.status, message);
}

export class Api {
  /** Called once when the service answers 401 to a call made with the session's token. */
  onExpired: () => void = () => {};

  constructor(readonly session: Session) {}

  async fetch(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    headers.set('authorization', `Bearer ${this.session.token}`);
    const response = await fetch(path, { ...init, headers });
    if (response.status === 401) {
      this.onExpired();
      throw new ApiError(401, 'your session has expired; sign in again');
    }
    if (!response.ok) throw await errorOf(response);
    return response;
  }

  async get<T>(path: string, query?: Query, signal?: AbortSignal): Promise<T> {
    return (await this.fetch(path + queryString(query), { signal })).json() as Promise<T>;
  }

  async send<T>(method: 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    const init: RequestInit = { method, signal };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers = { 'content-type': 'application/json' };
    }
    const response = await this.fetch(path, init);
    const text = await response.text();
    return (text ? JSON.parse(text) : {}) as T;
  }

  /** `<path>?access_token=…`, for an EventSource: browsers cannot set headers on one (nor on a WebSocket). */
  streamUrl(path: string): string {
    return `${path}?access_token=${encodeURIComponent(this.session.token)}`;
  }

  /** `wss://<host><path>?access_token=…`. */
  socketUrl(path: string): string {
    return `${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}${this.streamUrl(path)}`;
  }
}

export function savedToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function saveToken(token: string | null): void {
  if (token === null) sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, token);
}

/** The session a token stands for, or null when the service no longer accepts it. */
export async function sessionOf(token: string): Promise<Session | null> {
  const response = await fetch('/svcapi/me', { headers: { authorization: `Bearer ${token}` } });
  if (response.status === 401) return null;
  if (!response.ok) throw await errorOf(response);
  const me = await response.json() as { user_id: string; role: Session['role'] };
  return { token, email: me.user_id, role: me.role };
}

/** Signs in with email and password: the token, or an ApiError with the service's reason. */
export async function signIn(email: string, password: string): Promise<string> {
  const response = await fetch('/svcapi/login', {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }),
  });
  if (!response.ok) throw await errorOf(response);
  return ((await response.json()) as { token: string }).token;
}
