public enum _PlaceholderCountersignBroker {}
