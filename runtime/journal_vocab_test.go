package runtime

import (
	"encoding/json"
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
	b, err := json.Marshal(o.record())
	require.NoError(t, err)
	require.JSONEq(t, `{"retry":{"maximum_attempts":3,"maximum_interval_ms":9}}`, string(b))

	for _, doc := range []string{
		`{"options":{"retry":{"maximum_attempts":3,"maximum_interval_ms":9}}}`,
		`{"options":{"retry":{"max_attempts":3,"max_interval_ms":9}}}`,
	} {
		var e journalEvent
		require.NoError(t, decodeJournalEvent([]byte(doc), &e), doc)
		require.NotNil(t, e.Options, doc)
		require.True(t, e.Options.equal(o), "%s reads as %+v", doc, e.Options.Retry)
	}
}
