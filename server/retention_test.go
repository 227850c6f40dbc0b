package server_test

import (
	"testing"
	"time"
)

// TestRetentionLoopSurvivesAClockStepBack: the retention loop's hourly move of deliveries with
// no attempts left to the dead letters (see TestRunningServerDeadLettersSpentPendingHourly)
// goes on after the server's clock steps back, here by a day (an NTP step, a VM restored from a
// snapshot). Timed by the clock alone, the next move waited until the clock was an hour past
// the last move's time again: a day and an hour with the delivery pending and leased by nobody.
func TestRetentionLoopSurvivesAClockStepBack(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := spentUnderAnOldLimit(t, b)
		e.clock.Advance(-24 * time.Hour)
		e.clock.Advance(time.Hour)
		waitDeadLetters(t, e, 1, 5*time.Second, "after the clock stepped back a day, the delivery with no attempts left was not dead-lettered an hour on")
	})
}
