// Control: code that reads an optional or nullable field as if it were
// always there must NOT type-check, or the sample above proves nothing.
import type { components } from "./generated/hub";

type Subscription = components["schemas"]["Subscription"];

export function secretLength(s: Subscription): number {
  return s.signing_secret.length; // only in the answer to a create: optional
}

export function firstFailure(s: Subscription): string {
  return s.failure_span.first_failure_at; // null while the destination is healthy
}
