"""Step Functions, emulated: moto's engine (LocalStack's interpreter) corrected to AWS's documents.

moto parses and runs definitions but evaluates no JSONata, emits no status-change events, keeps no
history limit, and implements neither TestState nor RedriveExecution. The corrections, each a patch
whose docstring states the documented behaviour: ``patches.py`` (API, executions, history, task
tokens), ``states.py`` (Choice, Map, Parallel), ``jsonata.py`` (JSONata and variables),
``engine_clock.py`` (Waits, back-off and timeouts on the simulated clock), ``test_state.py``,
``redrive.py`` and ``mocks.py`` (mocked service integrations, Step Functions Local's mock
configuration file). ``history.py`` reads a history as a person does, for the CLI and the console.
"""
