// A client of the hub written against the types openapi-typescript generates
// from internal/api/openapi.json (generated/hub.ts, made by check.sh). It must
// type-check under `tsc --strict` without non-null assertions: fields the hub
// always sends are required, and nullable ones say so.
import type { components, operations } from "./generated/hub";

type Subscription = components["schemas"]["Subscription"];
type Filter = components["schemas"]["Filter"];
type Delivery = components["schemas"]["DeliveryWithLog"];
type ApiError = components["schemas"]["Error"];
type SubscriptionPage = operations["listSubscriptions"]["responses"][200]["content"]["application/json"];
type EventPage = operations["pullEvents"]["responses"][200]["content"]["application/json"];
type SubscriptionCreate = operations["createSubscription"]["requestBody"]["content"]["application/json"];
type Replayed = operations["replaySubscription"]["responses"][202]["content"]["application/json"];

class HubError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

async function call<T>(base: string, token: string, method: string, path: string, body?: unknown): Promise<T> {
  const init: RequestInit = { method, headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" } };
  if (body !== undefined) init.body = JSON.stringify(body);
  const resp = await fetch(base + path, init);
  if (!resp.ok) {
    const err = (await resp.json()) as ApiError;
    throw new HubError(resp.status, err.error.code, err.error.message);
  }
  return (await resp.json()) as T;
}

// A filter expression in words: the schema is recursive, each variant has
// exactly one dialect.
export function filterText(f: Filter): string {
  if ("exact" in f) return `exact ${JSON.stringify(f.exact)}`;
  if ("prefix" in f) return `prefix ${JSON.stringify(f.prefix)}`;
  if ("suffix" in f) return `suffix ${JSON.stringify(f.suffix)}`;
  if ("all" in f) return `all(${f.all.map(filterText).join(", ")})`;
  if ("any" in f) return `any(${f.any.map(filterText).join(", ")})`;
  return `not(${filterText(f.not)})`;
}

// One line per subscription: every field read below is required in the
// document, so no `!` and no `?? ""` on what the hub always sends.
export function describe(s: Subscription): string {
  const retries = s.retry_schedule === null ? "default curve" : s.retry_schedule.join(", ");
  const types = s.event_types.map((t) => `${t.type}:${t.schema_major}`).join(",");
  const auth = s.destination.auth === null ? "none" : s.destination.auth.type;
  const span = s.failure_span === null ? "healthy" : `failing since ${s.failure_span.first_failure_at}`;
  const disabled = s.disabled_reason ?? "-";
  const filters = s.filters.length === 0 ? "every event" : s.filters.map(filterText).join(" and ");
  return `${s.id} ${s.name} ${types} -> ${s.destination.url.toLowerCase()} auth=${auth} ` +
    `${s.enabled ? "enabled" : "disabled"} ${s.verification_state} breaker=${s.breaker_state} ` +
    `retries=${retries} ${span} disabled=${disabled} headers=${Object.keys(s.destination.headers).length} ` +
    `filters=${filters}`;
}

export function lastAttempt(d: Delivery): string {
  const log = d.attempt_log ?? [];
  const last = log[log.length - 1];
  if (last === undefined) return `${d.id}: no attempt yet (${d.status})`;
  const status = last.status_code === null ? "no answer" : String(last.status_code);
  return `${d.id} #${d.sequence} ${d.event_id}: ${status} in ${last.duration_ms}ms ${last.error ?? ""} ` +
    `dead_letter=${d.dead_letter_reason ?? "-"} next=${d.next_attempt_at ?? "-"}`;
}

export async function listAll(base: string, token: string): Promise<string[]> {
  const lines: string[] = [];
  let cursor: string | null = null;
  do {
    const q: string = cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`;
    const page: SubscriptionPage = await call<SubscriptionPage>(base, token, "GET", `/v1/subscriptions?limit=100${q}`);
    lines.push(...page.data.map(describe));
    cursor = page.next_cursor;
  } while (cursor !== null);
  return lines;
}

export async function pullOnce(base: string, key: string, after: string | null): Promise<string> {
  const q = after === null ? "" : `&after=${encodeURIComponent(after)}`;
  const page = await call<EventPage>(base, key, "GET", `/v1/events?wait=30s${q}`);
  for (const e of page.data) {
    const body = e.data_base64 === undefined ? JSON.stringify(e.data) : `${e.data_base64.length} bytes base64`;
    console.log(`${e.tenant_id} #${e.sequence} ${e.type} (${e.ce_type} from ${e.source} at ${e.time}) ${body}`);
  }
  return page.next_cursor; // always present, even on an empty page
}

export async function subscribe(base: string, key: string, url: string): Promise<string> {
  const req: SubscriptionCreate = {
    name: "ledger-hooks",
    event_types: [{ type: "transaction.posted", schema_major: 1 }],
    destination: { type: "webhook", url, headers: { "X-Custom": "v" }, auth: { type: "bearer", token: "t" } },
    retry_schedule: ["5s", "1m"],
    filters: [{ prefix: { source: "//midaz/" } }, { any: [{ suffix: { subject: ".brl" } }, { not: { exact: { region: "us" } } }] }],
  };
  const sub = await call<Subscription>(base, key, "POST", "/v1/subscriptions", req);
  return sub.signing_secret ?? "(not in this answer)";
}

export async function replayDeadLetters(base: string, key: string, id: string): Promise<number> {
  const r = await call<Replayed>(base, key, "POST", `/v1/subscriptions/${id}/replay`, { status: "dead_lettered" });
  return r.replayed;
}
