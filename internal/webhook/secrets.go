package webhook

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
	return Target{
		URL:            sub.Destination.URL,
		Headers:        sub.Destination.Headers,
		AuthType:       sub.Destination.AuthType,
		AuthHeaderName: sub.Destination.AuthHeaderName,
		Credentials:    sec.Auth,
		Secrets:        sec.Valid(now),
	}
}
