package journal

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRetryRecordVocabulary checks that a journal records an activity's
// retry policy in the words of a task's (maximum_attempts,
// maximum_interval_ms) and still reads journals written with the older
// names.
func TestRetryRecordVocabulary(t *testing.T) {
	o := optionsOf(&ActivityCommand{Retry: &ActivityRetry{MaxAttempts: 3, MaxInterval: 9 * time.Millisecond}})
	d, err := Encode(&ActivityScheduled{Options: o.record()})
	require.NoError(t, err)
	require.JSONEq(t, `{"options":{"retry":{"maximum_attempts":3,"maximum_interval_ms":9}}}`, string(d.Payload))

	for _, doc := range []string{
		`{"options":{"retry":{"maximum_attempts":3,"maximum_interval_ms":9}}}`,
		`{"options":{"retry":{"max_attempts":3,"max_interval_ms":9}}}`,
	} {
		ev, err := Decode(EventActivityScheduled, []byte(doc))
		require.NoError(t, err, doc)
		p := ev.(*ActivityScheduled)
		require.NotNil(t, p.Options, doc)
		require.True(t, p.Options.equal(o), "%s reads as %+v", doc, p.Options.Retry)
	}
}
