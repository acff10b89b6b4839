"""Why a job stays pending in a plan: a small CP-SAT model of the job against the plan's
leftover room (``model.py``), the search for the fewest rules to relax (``search.py``), the
words for them (``words.py``), and the plan annotation ``vcopt solve`` prints with them
(``annotate.py``). ``optimizer.explain`` builds the user's questions on top of it; nothing
here solves a snapshot or changes an instance."""
