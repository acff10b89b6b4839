"""Why a job is pending and what would make it fit; how many nodes a queue is short."""
