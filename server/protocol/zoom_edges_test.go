package protocol

import "testing"

// TestZoomDefaultToleranceIsNinetyMinutes pins the default window, not just its relation to
// zoomDefaultTolerance: Zoom sends a failed delivery 3 more times, the last about 85 minutes
// after the first (5 + 20 + 60 min, https://developers.zoom.us/blog/webhook-delays/, see
// providers.md), and does not document re-signing a retry, so a delivery signed 90 minutes ago
// must still verify under the default, one second more must not.
func TestZoomDefaultToleranceIsNinetyMinutes(t *testing.T) {
	t.Parallel()
	p := Zoom()
	keys := keysFor(t, p, zoomSecret)
	edge := fixedNow.Unix() - 90*60
	for _, tc := range []struct {
		name       string
		ts         int64
		wantReason Reason
	}{
		{"signed 90 minutes ago", edge, 0},
		{"signed 88 minutes ago", edge + 2*60, 0},
		{"signed 90 minutes and 1 second ago", edge - 1, ReasonTimestampOutOfTolerance},
		{"signed 90 minutes ahead", fixedNow.Unix() + 90*60, 0},
		{"in milliseconds, 90 minutes ago", edge * 1000, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := zoomSigned(tc.ts, zoomBody, zoomSecret)
			res, err := p.Verify(req, keys, Params{Now: fixedNow})
			wantKey := ""
			if tc.wantReason == 0 {
				wantKey = "k0"
			}
			checkOutcome(t, res, err, tc.wantReason, wantKey, req)
		})
	}
}
