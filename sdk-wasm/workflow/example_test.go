package workflow_test

import (
	"fmt"

	"github.com/weft-run/weft/sdk-wasm/workflow"
)

func ExampleNewApplicationError() {
	err := workflow.NewApplicationError("deploy failed", "deploy_failed")
	fmt.Println(err)
	// Output: deploy_failed: deploy failed
}
