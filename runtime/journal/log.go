package journal

import "encoding/json"

// IsLogLine reports whether payload, that of a task.log event
// (store.EventLog), is a line the plugin logged rather than the count
// {"dropped": N} of the lines a call went over the engine's bound by. It
// decodes the count's field: the text of a line may hold anything, the
// word "dropped" included. The journal counts the lines an attempt's runs
// logged, so that a replay does not log them again.
func IsLogLine(payload []byte) bool {
	var p struct {
		Dropped *int64 `json:"dropped"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return true // not the count, which the engine writes itself
	}
	return p.Dropped == nil
}
