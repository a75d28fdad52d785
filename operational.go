package hub

import "strings"

// Operational events: what the hub tells a tenant about its own
// subscriptions, through the tenant's own stream (SPEC 21). Their event
// types are hub.<resource>.<event>; their ce-types
// studio.lerian.hub.<resource>.<event>, a space producers may not use.
const (
	OperationalPrefix        = "hub."
	OperationalSource        = "//streaming-hub"
	OperationalSchemaVersion = "1.0.0"
	OperationalCETypePrefix  = "studio.lerian.hub."

	EventSubscriptionDisabled  = "hub.subscription.disabled"
	EventSubscriptionRecovered = "hub.subscription.recovered"
	EventDeliveryDeadLettered  = "hub.delivery.dead_lettered"
)

// OperationalTypes are the event types the hub emits, in the catalog's order.
var OperationalTypes = []string{EventSubscriptionDisabled, EventSubscriptionRecovered, EventDeliveryDeadLettered}

// OperationalDescriptions describe them for the catalog.
var OperationalDescriptions = map[string]string{
	EventSubscriptionDisabled:  "A subscription was disabled: auto-disable, a failed verification or the API.",
	EventSubscriptionRecovered: "A disabled subscription was enabled again.",
	EventDeliveryDeadLettered:  "A delivery job was dead-lettered (any reason).",
}

// IsOperational reports whether a ce-type is one of the hub's own.
func IsOperational(ceType string) bool { return strings.HasPrefix(ceType, OperationalCETypePrefix) }

// OperationalCEType is the ce-type of an operational event type:
// hub.subscription.disabled is studio.lerian.hub.subscription.disabled.
func OperationalCEType(eventType string) string { return "studio.lerian." + eventType }
