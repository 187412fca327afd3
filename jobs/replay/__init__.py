"""Allocation replay (DESIGN.md §7): what each RocketMQ client's ``allocate`` call returned.

``reference``: pure-Python oracle of the six strategies; ``spark_replay``: the same as Spark SQL
transforms; ``cases`` / ``spark_cases``: the ``vectors/`` case format; ``cli``: ``rocketlens replay``.
"""
