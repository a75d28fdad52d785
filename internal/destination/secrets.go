package destination

import (
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/envelope"
)

// OpenSecrets opens a subscription's sealed secrets, in memory only.
func OpenSecrets(k *envelope.Keyring, sub hub.Subscription) (hub.SubscriptionSecrets, error) {
	var sec hub.SubscriptionSecrets
	err := k.OpenJSON(sub.Secrets, sub.SecretsAAD(), &sec)
	return sec, err
}

// SealSecrets seals sec into sub.Secrets under the current KEK.
func SealSecrets(k *envelope.Keyring, sub *hub.Subscription, sec hub.SubscriptionSecrets) error {
	blob, err := k.SealJSON(sec, sub.SecretsAAD())
	if err != nil {
		return err
	}
	sub.Secrets = blob
	return nil
}

// TargetOf is sub's destination with its secrets opened, signing with the
// secrets valid at now.
func TargetOf(sub hub.Subscription, sec hub.SubscriptionSecrets, now time.Time) Target {
	creds := sec.Auth
	if sub.Destination.Type != hub.DestinationWebhook {
		creds = sec.Broker
	}
	return Target{Destination: sub.Destination, Credentials: creds, Secrets: sec.Valid(now), ClientKey: sec.ClientKey, SubscriptionID: sub.ID}
}
