"""CloudWatch, emulated: metric alarms that evaluate on the simulated clock and act when they change.

moto stores alarms, metric data and dashboards and answers PutMetricData, GetMetricData,
GetMetricStatistics and ListMetrics from what it stored; SetAlarmState only stores the new state. It
never evaluates an alarm, runs no alarm action, sends no "CloudWatch Alarm State Change" event, and
starts every alarm in OK. Here: ``alarms.py`` is what CloudWatch documents an alarm decides and says
(evaluation, the event, the SNS notification), ``metrics.py`` where datapoints come from (Step
Functions' ``AWS/States`` execution metrics, embedded-metric-format lines in Lambda logs) and how
an alarm finds its own, ``service.py`` runs them for one LocalAws, and ``patches.py`` corrects moto
(the first state, SetAlarmState's consequences).
"""
