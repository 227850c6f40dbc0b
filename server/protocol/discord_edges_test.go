package protocol

import "testing"

// TestDiscordDefaultToleranceIsFifteenMinutes pins the default window itself: Discord retries a
// Webhook Event for up to 10 minutes and does not document re-signing a retry (providers.md:
// no tolerance is documented), so the default leaves margin beyond that: a delivery signed 15
// minutes ago verifies, one second more does not.
func TestDiscordDefaultToleranceIsFifteenMinutes(t *testing.T) {
	t.Parallel()
	p := Discord()
	keys := keysFor(t, p, rfc8032Test1Public)
	now := fixedNow.Unix()
	for _, tc := range []struct {
		name       string
		ts         int64
		wantReason Reason
	}{
		{"signed 15 minutes ago", now - 15*60, 0},
		{"signed 12 minutes ago", now - 12*60, 0},
		{"signed 15 minutes ahead", now + 15*60, 0},
		{"signed 15 minutes and 1 second ago", now - 15*60 - 1, ReasonTimestampOutOfTolerance},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := discordSigned(t, tc.ts, discordBody, rfc8032Test1Private)
			res, err := p.Verify(req, keys, Params{Now: fixedNow})
			wantKey := ""
			if tc.wantReason == 0 {
				wantKey = "k0"
			}
			checkOutcome(t, res, err, tc.wantReason, wantKey, req)
		})
	}
}
