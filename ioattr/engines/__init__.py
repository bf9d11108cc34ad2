"""Storage-engine adapters: what only an engine knows (its files, objects, pages, roles, counters, findings), behind one interface (base.py), chosen per server by registry.py."""
