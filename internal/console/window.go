package console

import (
	"net/http"
	"net/url"
	"time"
)

// healthWindow is a window a health chart offers, as the API's window
// parameter (a Go duration) and as people read it.
type healthWindow struct {
	Param, Label string
	D            time.Duration
}

// healthWindows are the windows the charts offer, shortest first. The
// API takes any Go duration up to STREAMING_HUB_HEALTH_WINDOW (720h by
// default); a longer window has wider buckets (at most 100 of them).
var healthWindows = []healthWindow{
	{"1h", "1 h", time.Hour}, {"6h", "6 h", 6 * time.Hour}, {"24h", "24 h", 24 * time.Hour},
	{"168h", "7 d", 7 * 24 * time.Hour}, {"720h", "30 d", 30 * 24 * time.Hour},
}

// fitLookBack is how far back a subscription chart looks for activity when
// the user chose no window: the chart takes the shortest window that holds
// every attempt of this last week.
const fitLookBack = "168h"

// windowLabel is a window as people read it: "1 h", "7 d", or the
// parameter itself when it is none of the offered ones.
func windowLabel(param string) string {
	for _, w := range healthWindows {
		if w.Param == param {
			return w.Label
		}
	}
	if d, err := time.ParseDuration(param); err == nil {
		return duration(d)
	}
	return param
}

func windowDuration(param string) time.Duration {
	d, _ := time.ParseDuration(param)
	return d
}

// fitHealth reads a subscription's health over the shortest offered window
// that holds all its attempts of the last week: the week's health first,
// then shorter windows, shortest first, until one counts as many attempts.
// Without attempts in the week it answers the week, which says so. A hub
// whose STREAMING_HUB_HEALTH_WINDOW is shorter than the week refuses it
// (400); the look-back is then the longest window it takes.
func (c *Console) fitHealth(r *http.Request, s *session, id string) (string, m, error) {
	base := "/v1/subscriptions/" + url.PathEscape(id) + "/health?window="
	var ref m
	refAt := -1
	for i := len(healthWindows) - 1; i >= 0; i-- {
		w := healthWindows[i]
		if w.Param != fitLookBack && refAt < 0 && w.D > windowDuration(fitLookBack) {
			continue
		}
		err := c.call(r, s, "GET", base+w.Param, nil, &ref)
		if ae, ok := err.(*apiError); ok && ae.Status == http.StatusBadRequest {
			continue // longer than the hub keeps
		}
		if err != nil {
			return "", nil, err
		}
		refAt = i
		break
	}
	if refAt < 0 {
		return "", nil, &apiError{Status: http.StatusBadRequest, Message: "The hub refuses every health window the console offers."}
	}
	attempts, _ := ref["attempts"].(float64)
	if attempts == 0 {
		return healthWindows[refAt].Param, ref, nil
	}
	for _, w := range healthWindows[:refAt] {
		var h m
		if err := c.call(r, s, "GET", base+w.Param, nil, &h); err != nil {
			return "", nil, err
		}
		if n, _ := h["attempts"].(float64); n >= attempts {
			return w.Param, h, nil
		}
	}
	return healthWindows[refAt].Param, ref, nil
}
