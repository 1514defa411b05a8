package store

import "time"

// Response is the stored response of a finished task: the document its
// terminal event carries and GET /v1/responses/{id} returns. The JSON form
// holds durable values as envelopes (output_envelope, error.details_envelope).
type Response struct {
	// ID is "resp_" followed by the task's ULID (see ResponseIDFor).
	ID string `json:"id"`
	// Object is always "response".
	Object string `json:"object"`
	// TaskID is the task.
	TaskID string `json:"task_id"`
	// OwnerClientID is the task's owner.
	OwnerClientID string `json:"-"`
	// Status is the terminal status.
	Status Status `json:"status"`
	// Output is the result of a completed task.
	Output Payload `json:"output_envelope,omitzero"`
	// Error is the error of a failed task, or the reason of a cancelled one.
	Error *TaskError `json:"error,omitempty"`
	// CreatedAt is when the task was created.
	// Millisecond precision, UTC.
	CreatedAt time.Time `json:"created_at"`
	// FinishedAt is when the task finished.
	// Millisecond precision, UTC.
	FinishedAt time.Time `json:"finished_at"`
}

// ResponseObject is the value of Response.Object.
const ResponseObject = "response"

// ResponseOf builds the response document of a finished task, the
// payload of its terminal event.
func ResponseOf(task *Task) *Response {
	return &Response{
		ID:            task.ResponseID(),
		Object:        ResponseObject,
		TaskID:        task.ID,
		OwnerClientID: task.OwnerClientID,
		Status:        task.Status,
		Output:        task.Output,
		Error:         task.Error,
		CreatedAt:     task.CreatedAt,
		FinishedAt:    task.FinishedAt,
	}
}
