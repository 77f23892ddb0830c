"""superb.data"""
