// Package modules is the module registry of weft: the deployed versions of
// each module name, their files on disk and the compiled state of each
// digest. The engine (package runtime) holds one Registry and uses it to
// pin a new task to the latest version of its module and to load a task's
// digest on a worker, and the HTTP layer serves /v1/modules from it
// (runtime.Engine.Modules). It never imports the engine: it declares the
// two things it needs of the engine's executor (Executor: compiling a
// module, and running a workflow over a journal in check mode), and the
// engine adapts its Executor to them.
//
// # Deploying
//
// Deploy validates the name and compiles the module through the Executor,
// puts its file content-addressed into Files (store/blob on disk), records
// it as the next version of its name with store.ModuleInsert, and marks
// its digest loaded. Deploying the bytes of the latest version again
// returns that version. Tasks already created keep the digest they were
// pinned to, whatever is deployed or deleted after. ReplayCheck replays
// every running workflow of a name against a new version and reports those
// it would not replay; DeployCheckReplay deploys only when there are none.
//
// # Caches
//
// Get keeps the latest version of each name it read, so that creating a
// task does not read the modules table each time; Deploy and Delete
// invalidate a name, and a generation per name keeps a read that raced
// with an invalidation from filling the cache with a stale version. Load
// compiles a digest once for the life of the registry: concurrent loads of
// one digest share the work, and a failed load is tried again by the next.
//
// # Errors
//
// Every error meant for clients carries a fault.Code; each method's doc
// comment lists the codes it returns. An error of the store or the files
// without a code of its own is fault.Internal, its text kept for the logs.
package modules
