"""Which job a user means: ``namespace/name``, or a bare name when only one job carries it."""

from __future__ import annotations

from models.errors import InputError, Problem
from models.instance import Instance
from models.workload import Job


def find_job(instance: Instance, text: str) -> Job:
    """The job ``text`` names; an unknown or ambiguous name is bad input naming the choices."""
    if "/" in text:
        job = instance.job_by_key.get(text)
        if job is None:
            raise InputError([Problem("no such job in the instance", f'Job "{text}"', "job")])
        return job
    matches = [j for j in instance.jobs if j.name == text]
    if not matches:
        raise InputError([Problem("no such job in the instance", f'Job "{text}"', "job")])
    if len(matches) > 1:
        keys = ", ".join(j.key for j in matches)
        raise InputError(
            [Problem(f"ambiguous: {keys}; name it as namespace/name", f'Job "{text}"', "job")]
        )
    return matches[0]
