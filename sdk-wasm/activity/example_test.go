package activity_test

import (
	"errors"
	"fmt"

	"github.com/weft-run/weft/sdk-wasm/activity"
)

func ExampleNewNonRetryableApplicationError() {
	err := fmt.Errorf("charge: %w", activity.NewNonRetryableApplicationError("card was declined", "card_declined"))
	var ae *activity.ApplicationError
	if errors.As(err, &ae) {
		fmt.Println(ae.Type, ae.NonRetryable, ae.Message)
	}
	// Output: card_declined true card was declined
}
