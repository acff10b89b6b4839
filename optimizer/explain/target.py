"""Which job a user means: ``namespace/name``, or a bare name when only one job carries it."""

from __future__ import annotations

from models.errors import InputError, Problem, obj_name
from models.instance import Instance
from models.workload import Job


def find_job(instance: Instance, text: str) -> Job:
    """The job ``text`` names; an unknown or ambiguous name is bad input naming the choices
    (the name as typed is escaped and cut short: it comes from the command line)."""
    shown = obj_name("Job", text)
    if "/" in text:
        job = instance.job_by_key.get(text)
        if job is None:
            raise InputError([Problem(_unknown(instance, text), shown, "job")])
        return job
    matches = [j for j in instance.jobs if j.name == text]
    if not matches:
        raise InputError([Problem(_unknown(instance, text), shown, "job")])
    if len(matches) > 1:
        keys = ", ".join(j.key for j in matches)
        raise InputError([Problem(f"ambiguous: {keys}; name it as namespace/name", shown, "job")])
    return matches[0]


def _unknown(instance: Instance, text: str) -> str:
    """Why no job is named ``text``: a pod of another scheduler is no job of Volcano's."""
    for job in instance.foreign_jobs:
        if text in (job.key, job.name):
            return f"a pod of another scheduler ({job.scheduler_name}), not a job Volcano schedules"
    return "no such job in the instance"
