"""Lambda, emulated: deployed handlers really run, in warm processes, on the runtime's own Python.

moto stores functions and, to invoke one, starts a Docker container (or echoes the payload back).
Here there is no Docker: ``runtime.py`` runs each function's real code in a forked worker
(``worker.py``) whose imports are limited to what the Lambda runtime and the function's layers give
(``sandbox.py``); ``asynchronous.py`` adds what moto lacks for ``Event`` invocations (retries, maximum
event age, destinations); ``logs.py`` puts what each instance prints into CloudWatch Logs as the
runtime does (its own stream, START / END / REPORT); ``patches.py`` wires the runtime into moto and corrects InvocationType and
the error names Step Functions sees.
"""
