package hub

import "strings"

// Operational events: what the hub tells a tenant about its own
// subscriptions, through the tenant's own stream
// (docs/insight.md).
// Their event types are hub.<resource>.<event>; their ce-types
// studio.lerian.hub.<resource>.<event>, a space producers may not use.
const (
	OperationalPrefix        = "hub."
	OperationalSource        = "//streaming-hub"
	OperationalSchemaVersion = "1.0.0"
	OperationalCETypePrefix  = "studio.lerian.hub."

	EventSubscriptionDisabled  = "hub.subscription.disabled"
	EventSubscriptionRecovered = "hub.subscription.recovered"
	EventDeliveryDeadLettered  = "hub.delivery.dead_lettered"
	// EventSubscriptionCertificateExpiring tells a tenant, once a day, that
	// a subscription's client certificate expires within
	// CertificateExpiringWithin or has expired.
	EventSubscriptionCertificateExpiring = "hub.subscription.certificate_expiring"
	// EventTopicsDrift tells every active tenant that the topic-drift check
	// found differences or saw them resolved (docs/operations.md, "Topic
	// drift").
	EventTopicsDrift = "hub.topics.drift"
)

// OperationalTypes are the event types the hub emits, in the catalog's order.
var OperationalTypes = []string{EventSubscriptionDisabled, EventSubscriptionRecovered, EventDeliveryDeadLettered, EventTopicsDrift,
	EventSubscriptionCertificateExpiring}

// OperationalDescriptions describe them for the catalog.
var OperationalDescriptions = map[string]string{
	EventSubscriptionDisabled:            "A subscription was disabled: auto-disable, a failed verification or the API.",
	EventSubscriptionRecovered:           "A disabled subscription was enabled again.",
	EventDeliveryDeadLettered:            "A delivery job was dead-lettered (any reason).",
	EventSubscriptionCertificateExpiring: "A subscription's client certificate expires within 14 days, or has expired: once a day until it is replaced.",
	EventTopicsDrift:                     "The hub's topics drifted: a topic in no producer's manifest, a declared topic missing from Kafka, or a topic its consumer group is not assigned; or such a difference was resolved.",
}

// IsOperational reports whether a ce-type is one of the hub's own.
func IsOperational(ceType string) bool { return strings.HasPrefix(ceType, OperationalCETypePrefix) }

// OperationalCEType is the ce-type of an operational event type:
// hub.subscription.disabled is studio.lerian.hub.subscription.disabled.
func OperationalCEType(eventType string) string { return "studio.lerian." + eventType }
