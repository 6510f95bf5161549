"""DynamoDB, emulated: moto's tables, with table exports that take time and are named as on AWS.

moto finishes an ExportTableToPointInTime at once; the export poller needs the minutes AWS takes
(``patches.py``, on the simulated clock).
"""
