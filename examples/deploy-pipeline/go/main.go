// Command deploy-pipeline is a weft plugin in Go with one durable workflow,
// "deploy", and the four activities it orchestrates: it builds and tests a
// release, waits for a person to approve it (the signal "approve", with a
// timeout), deploys it with retries, and rolls back when the deploy fails
// for good or the workflow is cancelled while it deploys (a saga). See
// README.md for a walk-through with the weft CLI.
//
// The committed pipeline.wasm is built from the repository root with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -o examples/deploy-pipeline/go/pipeline.wasm ./examples/deploy-pipeline/go
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/weft-run/weft/sdk-wasm/activity"
	"github.com/weft-run/weft/sdk-wasm/workflow"
)

func init() {
	workflow.RegisterWithOptions(Deploy, workflow.RegisterOptions{Name: "deploy"})
	activity.RegisterWithOptions(Build, activity.RegisterOptions{Name: "build"})
	activity.RegisterWithOptions(Test, activity.RegisterOptions{Name: "test"})
	activity.RegisterWithOptions(Ship, activity.RegisterOptions{Name: "ship"})
	activity.RegisterWithOptions(Rollback, activity.RegisterOptions{Name: "rollback"})
}

// main is never called: the module is a WASI reactor.
func main() {}

// Release is the input of the workflow.
type Release struct {
	// Service is what to deploy, such as "web".
	Service string `json:"service"`
	// Version is the version to deploy.
	Version string `json:"version"`
	// Previous is the version to roll back to. Defaults to "previous".
	Previous string `json:"previous"`
	// ApprovalTimeoutMS is how long to wait for the "approve" signal.
	// Defaults to one hour.
	ApprovalTimeoutMS int64 `json:"approval_timeout_ms"`
	// FailTests makes the test activity report failures (to try that path).
	FailTests bool `json:"fail_tests"`
	// FailDeploy makes every deploy attempt fail (to try the rollback).
	FailDeploy bool `json:"fail_deploy"`
}

// Approval is the value of the "approve" signal.
type Approval struct {
	Approved bool   `json:"approved"`
	By       string `json:"by"`
	Comment  string `json:"comment"`
}

// Artifact is what build produces.
type Artifact struct {
	Name   string `json:"name"`
	Digest string `json:"digest"`
}

// TestRequest is the input of test.
type TestRequest struct {
	Artifact string `json:"artifact"`
	Fail     bool   `json:"fail"`
}

// TestReport is what test returns.
type TestReport struct {
	Passed int `json:"passed"`
	Failed int `json:"failed"`
}

// ShipRequest is the input of ship and rollback.
type ShipRequest struct {
	Service string `json:"service"`
	Version string `json:"version"`
	Fail    bool   `json:"fail"`
}

// Result is the output of a successful deploy.
type Result struct {
	Service    string `json:"service"`
	Version    string `json:"version"`
	Artifact   string `json:"artifact"`
	ApprovedBy string `json:"approved_by"`
	DeployedAt string `json:"deployed_at"`
}

// Deploy is the workflow. Each step is an activity of this module; the
// workflow itself only decides, so it replays deterministically from its
// journal after any crash or restart of the daemon.
func Deploy(ctx workflow.Context, in Release) (Result, error) {
	log := workflow.GetLogger(ctx)
	if in.Service == "" || in.Version == "" {
		return Result{}, workflow.NewNonRetryableApplicationError("service and version are required", "invalid_release")
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &workflow.RetryPolicy{MaximumAttempts: 3, InitialInterval: 100 * time.Millisecond},
	})

	var art Artifact
	if err := workflow.ExecuteActivity(ctx, "build", in).Get(ctx, &art); err != nil {
		return Result{}, err
	}
	var report TestReport
	if err := workflow.ExecuteActivity(ctx, "test", TestRequest{Artifact: art.Name, Fail: in.FailTests}).Get(ctx, &report); err != nil {
		return Result{}, err
	}
	if report.Failed > 0 {
		return Result{}, workflow.NewNonRetryableApplicationError(
			fmt.Sprintf("%d of %d tests failed", report.Failed, report.Passed+report.Failed), "tests_failed")
	}
	log.Info("waiting for approval", "artifact", art.Name)

	timeout := time.Duration(in.ApprovalTimeoutMS) * time.Millisecond
	if timeout <= 0 {
		timeout = time.Hour
	}
	var ok Approval
	err := workflow.WaitSignal(ctx, "approve", timeout).Get(ctx, &ok)
	switch {
	case errors.Is(err, workflow.ErrTimeout):
		return Result{}, workflow.NewNonRetryableApplicationError(
			fmt.Sprintf("nobody approved %s within %s", art.Name, timeout), "approval_timeout")
	case err != nil:
		return Result{}, err
	case !ok.Approved:
		return Result{}, workflow.NewNonRetryableApplicationError(
			fmt.Sprintf("%s rejected %s: %s", ok.By, art.Name, ok.Comment), "rejected")
	}
	log.Info("approved", "by", ok.By)

	// Deploying may fail for a while (a busy cluster): up to five attempts
	// with backoff, then roll back.
	shipCtx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy: &workflow.RetryPolicy{
			MaximumAttempts: 5, InitialInterval: 100 * time.Millisecond,
			BackoffCoefficient: 2, MaximumInterval: time.Second,
		},
	})
	// A deploy that fails for good, or that is cancelled (weft tasks
	// cancel) while it runs, may have left the service half-way: the saga
	// rolls it back, in a context the cancel does not interrupt.
	previous := in.Previous
	if previous == "" {
		previous = "previous"
	}
	var saga workflow.Saga
	saga.AddCompensation(func(ctx workflow.Context) error {
		back := ShipRequest{Service: in.Service, Version: previous}
		return workflow.ExecuteActivity(ctx, "rollback", back).Get(ctx, nil)
	})
	ship := ShipRequest{Service: in.Service, Version: in.Version, Fail: in.FailDeploy}
	if err := workflow.ExecuteActivity(shipCtx, "ship", ship).Get(ctx, nil); err != nil {
		log.Warn("deploy failed, rolling back", "error", err, "to", previous, "cancelled", workflow.IsCanceled(ctx))
		if rerr := saga.Compensate(ctx); rerr != nil {
			return Result{}, workflow.NewNonRetryableApplicationError(
				fmt.Sprintf("deploy failed (%v) and so did the rollback (%v)", err, rerr), "rollback_failed")
		}
		if workflow.IsCanceled(ctx) {
			return Result{}, err // workflow.ErrCanceled: the workflow ends cancelled, rolled back
		}
		return Result{}, workflow.NewNonRetryableApplicationError(
			fmt.Sprintf("deploy of %s %s failed (%v); rolled back to %s", in.Service, in.Version, err, previous), "deploy_failed")
	}
	return Result{
		Service:    in.Service,
		Version:    in.Version,
		Artifact:   art.Name,
		ApprovedBy: ok.By,
		DeployedAt: workflow.Now(ctx).Format(time.RFC3339),
	}, nil
}

// Build "builds" the release: it names the artifact and derives its digest
// from the service and version.
func Build(ctx context.Context, in Release) (Artifact, error) {
	name := fmt.Sprintf("%s-%s.tar.gz", in.Service, in.Version)
	sum := sha256.Sum256([]byte(name))
	activity.GetLogger(ctx).Info("built", "artifact", name)
	return Artifact{Name: name, Digest: "sha256:" + hex.EncodeToString(sum[:])}, nil
}

// Test "tests" the artifact; with fail set, three tests fail.
func Test(_ context.Context, in TestRequest) (TestReport, error) {
	if in.Artifact == "" {
		return TestReport{}, activity.NewNonRetryableApplicationError("no artifact", "invalid_artifact")
	}
	if in.Fail {
		return TestReport{Passed: 39, Failed: 3}, nil
	}
	return TestReport{Passed: 42}, nil
}

// Ship deploys a version; with fail set, every attempt fails with a
// retryable error, as a cluster that does not come up would.
func Ship(ctx context.Context, in ShipRequest) (string, error) {
	if in.Fail {
		return "", activity.NewApplicationError(fmt.Sprintf("%s %s did not become healthy", in.Service, in.Version), "unhealthy")
	}
	activity.GetLogger(ctx).Info("deployed", "service", in.Service, "version", in.Version)
	return strings.Join([]string{in.Service, in.Version}, "@"), nil
}

// Rollback puts the previous version back.
func Rollback(ctx context.Context, in ShipRequest) (string, error) {
	activity.GetLogger(ctx).Info("rolled back", "service", in.Service, "version", in.Version)
	return in.Service + "@" + in.Version, nil
}
